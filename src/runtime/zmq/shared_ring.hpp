#pragma once
// Shared-memory rings between two processes of one host (zmq runtime; docs/launch.md, "Shared
// memory on one host"). A payload sent to a process of the same host is copied once into a ring
// that the receiver has mapped, and only a small frame (header and an 8-byte locator,
// wire::kFlagPayloadShared) crosses ZeroMQ, authenticated as every frame is. The receiver copies
// the payload out of the ring into the posted receive: two copies in all, as MPI's shared-memory
// transports make, instead of ZeroMQ's copies through the kernel and CURVE's encryption.
//
// One ring per (sender process, receiver process), owned by the sender: a memfd of a 4 KiB control
// page and `capacity` data bytes, sealed against shrinking and growing, so a mapping of it can
// never fault however the other side behaves. The receiver opens it through /proc/<sender
// pid>/fd/<fd> (which the kernel allows only to the same user, or root), checks its size and
// seals, and maps it. The control page holds one u64 that only the receiver writes: how far (a
// ring position, in bytes since the start) it has released.
//
// Placement (place()): a message of n bytes allocated at ring position p starts at p, or at the
// next multiple of capacity when it would cross the end of the data area, and its region ends at
// the start plus n rounded up to 64 bytes; the next message is allocated where the previous region
// ends. Both sides compute it, so the locator only has to carry p, which the receiver checks
// against the position it expects. Messages are released in any order (a receive posted late
// holds its payload longer); `released` advances over the regions released from the oldest on.
//
// Hostile sides: a sender may write anything into its own ring: at worst the receiver reads wrong
// values from an authenticated peer, as it would in a frame. A receiver may write any `released`:
// the sender checks it against its own head and treats a value that cannot be right as a full ring
// (it then sends through ZeroMQ), and never writes outside the data area.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <utility>

namespace fast::runtime::zmq {

struct RingPlacement {
  std::uint64_t start = 0;  // ring position of the payload's first byte
  std::uint64_t end = 0;    // ring position where the next message is allocated
};
// Where a message of `bytes` (0 < bytes <= capacity) allocated at ring position `position` lies.
RingPlacement place(std::uint64_t position, std::uint64_t bytes, std::uint64_t capacity);

// The capacity of each of a process's rings: `setting` (FAST_SHM_BYTES) when >= 0 (0: no rings),
// else automatic: kAutoRingBudget shared among the `peers` other processes of the host, each ring
// between kAutoRingMin and kAutoRingMax, a multiple of 64. A ring's pages stay resident once its
// positions have wrapped, so the budget bounds what a process keeps however many share the host.
inline constexpr std::size_t kAutoRingBudget = std::size_t{256} << 20;
inline constexpr std::size_t kAutoRingMin = std::size_t{1} << 20;
inline constexpr std::size_t kAutoRingMax = std::size_t{32} << 20;
std::size_t ring_capacity(long long setting, int peers);

// The sender's side. Thread-safety: none; the caller serialises put() and sends the frames in the
// order of the positions it returned (the transport holds one lock across both).
class OutboundRing {
 public:
  static constexpr std::size_t kControlBytes = 4096;

  // Creates and seals the memfd. `capacity`: a positive multiple of 64. IoError when the system
  // refuses (no memfd, no memory).
  explicit OutboundRing(std::size_t capacity);
  ~OutboundRing();
  OutboundRing(const OutboundRing&) = delete;
  OutboundRing& operator=(const OutboundRing&) = delete;

  int fd() const { return fd_; }
  std::uint64_t file_bytes() const { return kControlBytes + capacity_; }
  std::size_t capacity() const { return capacity_; }

  // Copies `payload` (1 to capacity bytes) into the ring and returns its position, for the frame
  // that names it. nullopt when the ring has no room now (nothing is copied: the caller sends the
  // payload through ZeroMQ).
  std::optional<std::uint64_t> put(std::span<const std::byte> payload);

 private:
  int fd_ = -1;
  std::size_t capacity_ = 0;
  std::byte* base_ = nullptr;  // the whole mapping: control page, then data
  std::uint64_t head_ = 0;     // where the next message is allocated
};

// The receiver's side: a sender's ring, mapped. Thread-safety: take() from one thread (the
// transport's I/O thread); the owners it returns may be released from any thread, and keep the
// mapping alive.
class InboundRing : public std::enable_shared_from_this<InboundRing> {
 public:
  // Opens the ring of process `pid` (its descriptor `fd`), which must be `file_bytes` long (a
  // control page and a positive multiple of 64) and sealed against shrinking and growing.
  // IoError when it cannot be opened or mapped, InvalidArgument when it is not such a ring; both
  // name the process and what was expected versus got.
  static std::shared_ptr<InboundRing> open(long pid, int fd, std::uint64_t file_bytes);
  ~InboundRing();
  InboundRing(const InboundRing&) = delete;
  InboundRing& operator=(const InboundRing&) = delete;

  struct Payload {
    std::span<const std::byte> bytes;  // inside the mapping
    std::shared_ptr<const void> owner; // its destruction releases the region
  };
  // The payload of the next message: `position` must be the one expected, 0 < bytes <= capacity;
  // wire::FrameError otherwise (the ring's state is unchanged).
  Payload take(std::uint64_t position, std::uint64_t bytes);

  std::size_t capacity() const { return capacity_; }

  InboundRing(std::byte* base, std::size_t mapped, std::size_t capacity);  // for open()

 private:
  struct Region {
    std::uint64_t end = 0;
    bool released = false;
  };
  void release(std::uint64_t sequence);

  std::byte* base_ = nullptr;
  std::size_t mapped_ = 0;
  std::size_t capacity_ = 0;
  std::mutex mutex_;
  std::uint64_t expected_ = 0;       // the next message's position (take's thread only)
  std::deque<Region> regions_;       // under mutex_: taken, oldest first, not yet passed by `released`
  std::uint64_t first_sequence_ = 0; // under mutex_: the sequence number of regions_.front()
  std::uint64_t taken_ = 0;          // under mutex_: messages taken
};

}  // namespace fast::runtime::zmq
