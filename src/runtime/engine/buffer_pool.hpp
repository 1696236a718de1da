#pragma once
// BufferPool: message buffers, reused: a buffer returns here when its last owner lets go of it, so
// that a flow of large messages does not fault in fresh pages for each one (costly on virtual
// machines that shadow page tables, and with glibc's defaults, which give blocks from 128 KiB
// their own mapping). Used for the messages of a direct stream and those assembled from a ring's
// fragments (zmq runtime), and for the copies of messages from another process that arrive before
// their receive (Mailbox). Keeps at most max_cached_bytes of idle buffers.
// Thread-safety: take() and the returns from any thread. Ownership: a buffer keeps its pool alive
// (shared_from_this).
#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <tuple>
#include <utility>
#include <vector>

namespace fast::runtime::engine {

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  static constexpr std::size_t kMaxCachedBytes = 256u << 20;
  static constexpr std::align_val_t kAlignment{64};  // every dtype's alignment, and a cache line

  explicit BufferPool(std::size_t max_cached_bytes = kMaxCachedBytes) : max_cached_(max_cached_bytes) {}
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  ~BufferPool() {
    for (auto [bytes, memory] : idle_) ::operator delete(memory, kAlignment);
  }
  // The bytes of the idle buffers kept.
  std::size_t idle_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }
  // A buffer of at least `bytes` (at least 1), owned by the returned pointer.
  std::shared_ptr<std::byte> take(std::size_t bytes) {
    bytes = std::max<std::size_t>(bytes, 1);
    std::byte* memory = nullptr;
    std::size_t capacity = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto best = idle_.end();
      for (auto it = idle_.begin(); it != idle_.end(); ++it)
        if (it->first >= bytes && (best == idle_.end() || it->first < best->first)) best = it;
      if (best != idle_.end()) {
        std::tie(capacity, memory) = *best;
        cached_ -= capacity;
        idle_.erase(best);
      }
    }
    if (!memory) {
      capacity = bytes;
      memory = static_cast<std::byte*>(::operator new(capacity, kAlignment));
    }
    return std::shared_ptr<std::byte>(memory,
                                      [pool = shared_from_this(), capacity](std::byte* m) { pool->give(m, capacity); });
  }

 private:
  void give(std::byte* memory, std::size_t capacity) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_ + capacity <= max_cached_) {
        idle_.emplace_back(capacity, memory);
        cached_ += capacity;
        return;
      }
    }
    ::operator delete(memory, kAlignment);
  }

  const std::size_t max_cached_;
  std::mutex mutex_;
  std::vector<std::pair<std::size_t, std::byte*>> idle_;
  std::size_t cached_ = 0;
};

}  // namespace fast::runtime::engine
