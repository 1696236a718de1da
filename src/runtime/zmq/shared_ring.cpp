#include "shared_ring.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/wire/frame.hpp"

namespace fast::runtime::zmq {

namespace {
constexpr std::uint64_t kAlign = 64;
constexpr unsigned kSeals = F_SEAL_SHRINK | F_SEAL_GROW;

std::uint64_t round_up(std::uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The control page's one field, shared between two processes.
std::atomic_ref<std::uint64_t> released_of(std::byte* base) {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(base));
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
  FAST_ENFORCE(capacity > 0 && capacity % kAlign == 0, "shared-memory ring: capacity: expected a positive multiple of {}, got {}",
               kAlign, capacity);
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

std::optional<std::uint64_t> OutboundRing::put(std::span<const std::byte> payload) {
  const std::uint64_t n = payload.size();
  if (n == 0 || n > capacity_) return std::nullopt;
  const std::uint64_t released = released_of(base_).load(std::memory_order_acquire);
  // What the receiver wrote cannot be trusted: it must lie in [head - capacity, head].
  if (released > head_ || head_ - released > capacity_) return std::nullopt;
  const RingPlacement p = place(head_, n, capacity_);
  if (p.end - released > capacity_) return std::nullopt;
  std::memcpy(base_ + kControlBytes + p.start % capacity_, payload.data(), n);
  const std::uint64_t position = head_;
  head_ = p.end;
  std::atomic_thread_fence(std::memory_order_release);  // the bytes before the frame that names them
  return position;
}

std::shared_ptr<InboundRing> InboundRing::open(long pid, int fd, std::uint64_t file_bytes) {
  const std::string path = fmt::format("/proc/{}/fd/{}", pid, fd);
  FAST_ENFORCE(file_bytes > OutboundRing::kControlBytes && (file_bytes - OutboundRing::kControlBytes) % kAlign == 0 &&
                   file_bytes <= (1ull << 40),
               "shared-memory ring of pid {}: size: expected a control page of {} bytes and a multiple of {}, got {}",
               pid, OutboundRing::kControlBytes, kAlign, file_bytes);
  const int own = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  FAST_ENFORCE_AS(core::IoError, own >= 0, "shared-memory ring of pid {}: cannot open {}: {}", pid, path, errno_text());
  struct stat st{};
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

InboundRing::Payload InboundRing::take(std::uint64_t position, std::uint64_t bytes) {
  if (position != expected_)
    throw wire::FrameError(
        fmt::format("frame: shared payload position: expected {}, got {}", expected_, position));
  if (bytes == 0 || bytes > capacity_)
    throw wire::FrameError(
        fmt::format("frame: shared payload_bytes: expected 1 to {} (the ring), got {}", capacity_, bytes));
  const RingPlacement p = place(position, bytes, capacity_);
  expected_ = p.end;
  std::uint64_t sequence = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sequence = taken_++;
    regions_.push_back({p.end, false});
  }
  std::atomic_thread_fence(std::memory_order_acquire);  // the bytes the frame names
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
  auto slot = std::make_shared<Slot>(shared_from_this(), sequence);
  return {{base_ + OutboundRing::kControlBytes + p.start % capacity_, static_cast<std::size_t>(bytes)}, std::move(slot)};
}

void InboundRing::release(std::uint64_t sequence) {
  std::lock_guard<std::mutex> lock(mutex_);
  regions_[static_cast<std::size_t>(sequence - first_sequence_)].released = true;
  std::uint64_t released = 0;
  bool advanced = false;
  while (!regions_.empty() && regions_.front().released) {
    released = regions_.front().end;
    regions_.pop_front();
    ++first_sequence_;
    advanced = true;
  }
  if (advanced) released_of(base_).store(released, std::memory_order_release);
}

}  // namespace fast::runtime::zmq
