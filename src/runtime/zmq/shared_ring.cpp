#include "shared_ring.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "copy_past_caches.hpp"
#include "fast/core/error.hpp"
#include "fast/wire/frame.hpp"

namespace fast::runtime::zmq {

namespace {
constexpr std::uint64_t kAlign = 64;
// put(): records that must stay free behind a jump back to the ring's start.
constexpr std::uint64_t kJumpDepth = 8;
constexpr unsigned kSeals = F_SEAL_SHRINK | F_SEAL_GROW;

std::uint64_t round_up(std::uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The control page's fields (shared_ring.hpp), each on its own cache line.
constexpr std::size_t kReleasedOffset = 0, kPublishedOffset = 64, kBellOffset = 128, kWaitingOffset = 132,
                      kPolledOffset = 192, kRoomWantedOffset = 256;
std::atomic_ref<std::uint64_t> u64_at(std::byte* base, std::size_t offset) {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(base + offset));
}
std::atomic_ref<std::uint32_t> u32_at(std::byte* base, std::size_t offset) {
  return std::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(base + offset));
}
// A futex shared between processes (no FUTEX_PRIVATE_FLAG): the word lies in a MAP_SHARED mapping.
void futex_wake(std::byte* word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}
void futex_wait(std::byte* word, std::uint32_t expected, std::chrono::milliseconds timeout) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  const timespec limit{.tv_sec = static_cast<time_t>(ns / 1000000000), .tv_nsec = static_cast<long>(ns % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT, expected, &limit, nullptr, 0);
}

std::string errno_text() { return std::strerror(errno); }
}  // namespace

RingPlacement place(std::uint64_t position, std::uint64_t bytes, std::uint64_t capacity) {
  std::uint64_t start = position;
  const std::uint64_t offset = position % capacity;
  if (offset + bytes > capacity) start = position + (capacity - offset);
  return {start, start + round_up(bytes)};
}

std::size_t ring_capacity(long long setting, int peers) {
  if (setting >= 0) return static_cast<std::size_t>(setting);
  const std::size_t share = kAutoRingBudget / static_cast<std::size_t>(std::max(peers, 1));
  return std::clamp(share, kAutoRingMin, kAutoRingMax) / kAlign * kAlign;
}

OutboundRing::OutboundRing(std::size_t capacity) : capacity_(capacity) {
  FAST_ENFORCE(capacity > 0 && capacity % kAlign == 0,
               "shared-memory ring: capacity: expected a positive multiple of {}, got {}", kAlign, capacity);
  fd_ = memfd_create("fast-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  FAST_ENFORCE_AS(core::IoError, fd_ >= 0, "shared-memory ring: memfd_create failed: {}", errno_text());
  const auto bytes = static_cast<off_t>(file_bytes());
  void* map = MAP_FAILED;
  if (ftruncate(fd_, bytes) == 0 && fcntl(fd_, F_ADD_SEALS, kSeals | F_SEAL_SEAL) == 0)
    map = mmap(nullptr, file_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (map == MAP_FAILED) {
    const std::string why = errno_text();
    close(fd_);
    FAST_THROW(core::IoError, "shared-memory ring of {} bytes: {}", file_bytes(), why);
  }
  base_ = static_cast<std::byte*>(map);
}

OutboundRing::~OutboundRing() {
  if (base_ != nullptr) munmap(base_, file_bytes());
  if (fd_ >= 0) close(fd_);
}

bool OutboundRing::put(std::span<const std::byte> head, std::span<const std::byte> payload) {
  const std::uint64_t body = head.size() + payload.size();
  if (body > max_body()) return false;
  const std::uint64_t released = u64_at(base_, kReleasedOffset).load(std::memory_order_acquire);
  // What the receiver wrote cannot be trusted: it must lie in [head - capacity, head].
  if (released > head_ || head_ - released > capacity_) return false;
  RingPlacement p = place(head_, kRecordPrefixBytes + body, capacity_);
  // Back to the ring's first byte (the next lap) whenever the record fits there: a ring whose
  // records are taken about as fast as they come then reuses its first pages, which stay warm,
  // instead of walking through all of its capacity (on a VM with shadow page tables a page's first
  // touch made a 0.94 MB copy take 3.4 ms instead of 0.05; docs/launch.md, "Shared memory on one
  // host"). At a lap's start already, the next lap never fits: nothing changes.
  // Only when room for kJumpDepth more records as large (at most a quarter of the ring, at least
  // one record) stays free after it: the rest of the lap, passed over, is released only when the
  // reader reaches the record, so a jump that leaves less keeps the next records waiting for this
  // one to be taken (a ring one record deep: 4 processes all-reducing 1 MiB waited for room about
  // 8 times per all-reduce). Small records still cycle through a few warm pages.
  const std::uint64_t lap = head_ + (capacity_ - head_ % capacity_);
  const std::uint64_t size = p.end - p.start;
  const std::uint64_t reserve = std::max<std::uint64_t>(size, std::min<std::uint64_t>(kJumpDepth * size, capacity_ / 4));
  if (lap + size + reserve - released <= capacity_) p = {lap, lap + size};
  std::byte* data = base_ + kControlBytes;
  if (p.end - released > capacity_) {
    // No room now. A record that must start at the next lap (it does not fit before this lap's end)
    // waits for the rest of this lap to be passed: the wrap is marked and published now, so that
    // the reader passes it and releases it. Else a record longer than both the rest of the lap and
    // the lap's part before it would find no room even in an empty ring.
    // Published, the marker counts as a record up to the lap's end: it needs that room as one would.
    if (p.start != head_ && lap - released <= capacity_) {
      std::memcpy(data + head_ % capacity_, &kWrapMarker, sizeof(kWrapMarker));
      head_ = p.start;
      publish();
    }
    return false;
  }
  if (p.start != head_) std::memcpy(data + head_ % capacity_, &kWrapMarker, sizeof(kWrapMarker));
  std::byte* record = data + p.start % capacity_;
  std::memcpy(record, &body, sizeof(body));
  if (!head.empty()) std::memcpy(record + kRecordPrefixBytes, head.data(), head.size());
  std::byte* to = record + kRecordPrefixBytes + head.size();
  if (payload.size() >= kPastCachesBytes)
    copy_past_caches(to, payload.data(), payload.size());  // ends with a store fence: published after
  else if (!payload.empty())
    std::memcpy(to, payload.data(), payload.size());
  head_ = p.end;
  publish();
  return true;
}

void OutboundRing::publish() {
  u64_at(base_, kPublishedOffset).store(head_, std::memory_order_release);
  ring_bell();
}

void OutboundRing::ring_bell() {
  // Dekker's order with the reader's sleep(): add to the bell, then read `waiting`; the reader
  // sets `waiting`, then reads the bell (both sequentially consistent). And with the receiver's
  // pollers: `polled` set means a thread of the receiver looks at the ring itself, and clears it
  // before its last look (InboundRing::set_polled), so the reader is left asleep meanwhile.
  u32_at(base_, kBellOffset).fetch_add(1);
  if (u32_at(base_, kWaitingOffset).load() != 0 && u32_at(base_, kPolledOffset).load() == 0)
    futex_wake(base_ + kBellOffset);
}

void OutboundRing::want_room(bool wanted) {
  if (wanted == room_wanted_) return;
  room_wanted_ = wanted;
  u32_at(base_, kRoomWantedOffset).store(wanted ? 1 : 0);
  // Dekker's order with InboundRing::release(): set the flag, then read `released` (put()); the
  // receiver stores `released`, then reads the flag (both sequentially consistent).
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

std::shared_ptr<InboundRing> InboundRing::open(long pid, int fd, std::uint64_t file_bytes) {
  const std::string path = fmt::format("/proc/{}/fd/{}", pid, fd);
  FAST_ENFORCE(file_bytes > OutboundRing::kControlBytes && (file_bytes - OutboundRing::kControlBytes) % kAlign == 0 &&
                   file_bytes <= (1ull << 40),
               "shared-memory ring of pid {}: size: expected a control page of {} bytes and a multiple of {}, got {}",
               pid, OutboundRing::kControlBytes, kAlign, file_bytes);
  const int own = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  FAST_ENFORCE_AS(core::IoError, own >= 0, "shared-memory ring of pid {}: cannot open {}: {}", pid, path, errno_text());
  struct stat st {};
  std::string problem;
  if (fstat(own, &st) != 0) {
    problem = fmt::format("fstat failed: {}", errno_text());
  } else if (static_cast<std::uint64_t>(st.st_size) != file_bytes) {
    problem = fmt::format("size: expected {} bytes, got {}", file_bytes, st.st_size);
  } else {
    const int seals = fcntl(own, F_GET_SEALS);
    if (seals < 0 || (static_cast<unsigned>(seals) & kSeals) != kSeals)
      problem = fmt::format("seals: expected shrink and grow sealed, got {:#x}", seals);
  }
  void* map = problem.empty() ? mmap(nullptr, file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, own, 0) : MAP_FAILED;
  if (problem.empty() && map == MAP_FAILED) problem = fmt::format("mmap failed: {}", errno_text());
  close(own);
  FAST_ENFORCE(problem.empty(), "shared-memory ring of pid {} ({}): {}", pid, path, problem);
  return std::make_shared<InboundRing>(static_cast<std::byte*>(map), file_bytes,
                                       file_bytes - OutboundRing::kControlBytes);
}

InboundRing::InboundRing(std::byte* base, std::size_t mapped, std::size_t capacity)
    : base_(base), mapped_(mapped), capacity_(capacity) {}

InboundRing::~InboundRing() { munmap(base_, mapped_); }

std::optional<std::span<const std::byte>> InboundRing::peek() {
  std::byte* data = base_ + OutboundRing::kControlBytes;
  for (;;) {
    if (peeked_)
      return std::span<const std::byte>(data + peeked_->start % capacity_ + kRecordPrefixBytes, peeked_length_);
    // Each shared value is read once, then checked: the sender may change it meanwhile.
    const std::uint64_t published = u64_at(base_, kPublishedOffset).load(std::memory_order_acquire);
    if (published == expected_) return std::nullopt;
    if (published < expected_ || published - expected_ > capacity_ || published % kAlign != 0)
      throw wire::FrameError(fmt::format("shared-memory ring: published: expected a position from {} to {}, got {}",
                                         expected_, expected_ + capacity_, published));
    std::uint64_t length = 0;
    std::memcpy(&length, data + expected_ % capacity_, sizeof(length));
    if (length == kWrapMarker) {  // the record starts at the next lap; this lap's rest is free
      const std::uint64_t next = expected_ + (capacity_ - expected_ % capacity_);
      if (next > published)
        throw wire::FrameError(fmt::format("shared-memory ring: a wrap marker at {} but records published only to {}",
                                           expected_, published));
      bool freed = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        push_region(next, true);
        freed = advance_released();
      }
      if (freed) tell_room();
      expected_ = next;
      continue;
    }
    if (length > capacity_ - kRecordPrefixBytes)
      throw wire::FrameError(fmt::format("shared-memory ring: record length at {}: expected at most {}, got {}",
                                         expected_, capacity_ - kRecordPrefixBytes, length));
    const RingPlacement p = place(expected_, kRecordPrefixBytes + length, capacity_);
    if (p.start != expected_ || p.end > published)
      throw wire::FrameError(fmt::format(
          "shared-memory ring: a record of {} bytes at {} crosses the end of the ring or of what was published ({})",
          length, expected_, published));
    peeked_ = p;
    peeked_length_ = length;
  }
}

InboundRing::Payload InboundRing::take() {
  FAST_ENFORCE(peeked_.has_value(), "shared-memory ring: take() without a record from peek()");
  const RingPlacement p = *peeked_;
  const std::span<const std::byte> body = *peek();
  peeked_.reset();
  expected_ = p.end;
  std::uint64_t sequence = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sequence = push_region(p.end, false);
  }
  class Slot {
   public:
    Slot(std::shared_ptr<InboundRing> ring, std::uint64_t sequence) : ring_(std::move(ring)), sequence_(sequence) {}
    ~Slot() { ring_->release(sequence_); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    std::shared_ptr<InboundRing> ring_;
    std::uint64_t sequence_;
  };
  return {body, std::make_shared<Slot>(shared_from_this(), sequence)};
}

std::uint32_t InboundRing::bell() const { return u32_at(base_, kBellOffset).load(); }

void InboundRing::sleep(std::uint32_t seen, std::chrono::milliseconds timeout) {
  u32_at(base_, kWaitingOffset).store(1);
  if (u32_at(base_, kBellOffset).load() == seen) futex_wait(base_ + kBellOffset, seen, timeout);
  u32_at(base_, kWaitingOffset).store(0);
}

void InboundRing::set_polled(bool polled) {
  u32_at(base_, kPolledOffset).store(polled ? 1 : 0);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // before the caller's next look at `published`
}

bool InboundRing::pending() const {
  return u64_at(base_, kPublishedOffset).load(std::memory_order_acquire) != expected_ || peeked_.has_value();
}

void InboundRing::wake() {
  u32_at(base_, kBellOffset).fetch_add(1);
  futex_wake(base_ + kBellOffset);
}

std::uint64_t InboundRing::push_region(std::uint64_t end, bool released) {
  regions_.push_back({end, released});
  return taken_++;
}

bool InboundRing::advance_released() {
  std::uint64_t released = 0;
  bool advanced = false;
  while (!regions_.empty() && regions_.front().released) {
    released = regions_.front().end;
    regions_.pop_front();
    ++first_sequence_;
    advanced = true;
  }
  if (advanced) u64_at(base_, kReleasedOffset).store(released);  // sequentially consistent: tell_room()
  return advanced;
}

void InboundRing::release(std::uint64_t sequence) {
  bool freed = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    regions_[static_cast<std::size_t>(sequence - first_sequence_)].released = true;
    freed = advance_released();
  }
  if (freed) tell_room();
}

void InboundRing::tell_room() {
  if (on_room_ && u32_at(base_, kRoomWantedOffset).load() != 0) on_room_();
}

}  // namespace fast::runtime::zmq
