#pragma once
// Shared-memory rings between two processes of one host (zmq runtime; docs/launch.md, "Shared
// memory on one host"). Every message from one process to another of its host travels as a record
// in a ring that the receiver has mapped: copied once in by the sender, once out by the receiver,
// as MPI's shared-memory transports do, instead of ZeroMQ's copies through two I/O threads, the
// kernel and CURVE's encryption. The ring itself is offered in a `hello` frame over the
// authenticated connection, so only an authenticated process of the run can write to it.
//
// One ring per (sender process, receiver process), owned by the sender: a memfd of a 4 KiB control
// page and `capacity` data bytes, sealed against shrinking and growing, so a mapping of it can
// never fault however the other side behaves. The receiver opens it through /proc/<sender
// pid>/fd/<fd> (which the kernel allows only to the same user, or root), checks its size and
// seals, and maps it. The control page holds, each on its own cache line:
//   - `released` (u64, written by the receiver): how far (a ring position, in bytes since the
//     start) the receiver has released;
//   - `published` (u64, written by the sender): how far the records are complete;
//   - `bell` (u32, added to by the sender after each publication) and `waiting` (u32, set by the
//     receiver's reader while it sleeps on `bell` with a futex): the sender wakes the reader only
//     when it sleeps;
//   - `polled` (u32, written by the receiver): 1 while a thread of the receiver that waits for a
//     message looks at the ring itself (progress in the caller, transport.hpp); the sender then
//     leaves the reader asleep, and the receiver looks once more after clearing it;
//   - `room_wanted` (u32, written by the sender): 1 while messages wait for room in the ring; the
//     receiver then tells the sender each time it releases room (InboundRing::set_on_room; the
//     transport rings the bell of its own ring to the sender, whose reader sends what waited).
//
// Records: a record of body length L at ring position p starts at p, or at the next multiple of
// capacity when 64 + L bytes would cross the end of the data area (then a wrap marker, length
// kWrapMarker, is written at p); it is a 64-byte prefix (u64 length, the rest unused) followed by the
// body, and its region ends at the start plus 64 + L rounded up to 64 bytes (place()); the next
// record is allocated where the previous region ends. Bodies are 64-byte aligned. Records are
// released in any order (a receive posted late holds its payload longer); `released` advances
// over the regions released from the oldest on.
//
// Hostile sides: a sender may write anything into its own ring: the receiver reads each value of
// the control page and prefixes once and checks it (a position beyond what can have been
// published, a length larger than the ring) before it reads a body, and refuses a ring that breaks
// a rule with wire::FrameError; otherwise it at worst reads wrong values from an authenticated
// peer, as it would in a frame. A receiver may write any `released`: the sender checks it against
// its own head and treats a value that cannot be right as a full ring, and never writes outside
// the data area. Either side may write `bell` and `waiting`: at worst a wake-up too many, or a
// reader that sleeps until its timeout.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <utility>

namespace fast::runtime::zmq {

struct RingPlacement {
  std::uint64_t start = 0;  // ring position of the record's first byte (its prefix)
  std::uint64_t end = 0;    // ring position where the next record is allocated
};
// Where a record of `bytes` in all, prefix included (0 < bytes <= capacity), allocated at ring
// position `position` lies.
RingPlacement place(std::uint64_t position, std::uint64_t bytes, std::uint64_t capacity);

// The capacity of each of a process's rings: `setting` (FAST_SHM_BYTES) when >= 0 (0: no rings),
// else automatic: kAutoRingBudget shared among the `peers` other processes of the host, each ring
// between kAutoRingMin and kAutoRingMax, a multiple of 64. A ring's pages stay resident once
// touched (put() reaches past the first ones only while records wait to be taken), so the budget
// bounds what a process keeps however many share the host. kAutoRingMax is 8 MiB: room for the
// all-reduce's 4 MiB parts (a larger message goes in fragments, transport.hpp), and rings that
// stay in the caches: 2 processes all-reducing 16 MiB took 3.65 ms with 32 MiB rings, whose
// records walk through the whole ring while parts wait to be taken, and 1.14 ms with 8 MiB ones
// (AMD EPYC, 32 MiB of L3; docs/benchmarks.md, (e)).
inline constexpr std::size_t kAutoRingBudget = std::size_t{256} << 20;
inline constexpr std::size_t kAutoRingMin = std::size_t{1} << 20;
inline constexpr std::size_t kAutoRingMax = std::size_t{8} << 20;
std::size_t ring_capacity(long long setting, int peers);

inline constexpr std::uint64_t kRecordPrefixBytes = 64;
inline constexpr std::uint64_t kWrapMarker = ~std::uint64_t{0};

// The sender's side. Thread-safety: none; the caller serialises put().
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
  // The largest body a record can carry.
  std::size_t max_body() const { return capacity_ - kRecordPrefixBytes; }

  // Copies one record, whose body is `head` then `payload`, into the ring, publishes it and wakes
  // the reader if it sleeps. False when the ring has no room now or the body is larger than
  // max_body() (nothing is written: the caller sends the message another way). The record goes
  // to the ring's first byte (the next lap, behind a wrap marker) whenever it fits there, else
  // where the last one ended: a ring whose records are taken about as fast as they come keeps
  // reusing its first pages. A payload of kPastCachesBytes or more is copied past the caches
  // (copy_past_caches.hpp).
  // A record that must start at the next lap and finds no room yet leaves a wrap marker behind
  // (published), so that the rest of the lap is passed and released: a record of any size up to
  // max_body() then finds room once the reader has taken what was before it.
  bool put(std::span<const std::byte> head, std::span<const std::byte> payload);

  // Sets or clears `room_wanted`, then a full fence: a put() after setting it sees every release
  // whose receiver read the flag clear. Serialised with put().
  void want_room(bool wanted);
  // Adds to the bell and wakes the reader if it sleeps (and no thread of the receiver polls),
  // without publishing anything: the receiver's reader then looks at what its own process has to
  // send (room released in the other direction). Any thread: touches the control page only.
  void ring_bell();

 private:
  // Publishes head_ and rings the bell.
  void publish();
  bool room_wanted_ = false;  // the last value written to `room_wanted`
  int fd_ = -1;
  std::size_t capacity_ = 0;
  std::byte* base_ = nullptr;  // the whole mapping: control page, then data
  std::uint64_t head_ = 0;     // where the next record is allocated
};

// The receiver's side: a sender's ring, mapped. Thread-safety: peek(), take() and sleep() from one
// thread at a time (the transport serialises them); the owners take() returns may be released
// from any thread, and keep the mapping alive; wake() from any thread.
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

  // The body of the next published record, inside the mapping, or nullopt when none is published
  // yet. Passes over wrap markers. wire::FrameError when the sender broke a rule (a published
  // position out of range, a record longer than the ring or than what was published); the ring is
  // then unusable. The same record until take().
  std::optional<std::span<const std::byte>> peek();
  struct Payload {
    std::span<const std::byte> bytes;   // inside the mapping
    std::shared_ptr<const void> owner;  // its destruction releases the region
  };
  // Consumes the record peek() returned (which must have returned one).
  Payload take();

  // The reader's wait: returns at once when the sender published since `seen` (a value of bell()
  // read before the reader last looked for records), else sleeps until it publishes, wake() is
  // called, or `timeout` passes.
  std::uint32_t bell() const;
  void sleep(std::uint32_t seen, std::chrono::milliseconds timeout);
  // Ends a sleep (the transport stops the reader).
  void wake();
  // `callback` runs each time room is released while the sender wants room (`room_wanted`), on
  // the releasing thread (the reader's, or whichever drops a Payload's owner), outside the ring's
  // lock; it must not block. Set before the ring is shared between threads.
  void set_on_room(std::function<void()> callback) { on_room_ = std::move(callback); }
  // Sets or clears `polled` (any thread; the transport serialises the calls), followed by a full
  // fence: a look at the ring after clearing it sees every record whose sender saw it set.
  void set_polled(bool polled);
  // Whether a record was published that peek() has not consumed yet (the reader's thread, or one
  // serialised with it).
  bool pending() const;

  std::size_t capacity() const { return capacity_; }

  InboundRing(std::byte* base, std::size_t mapped, std::size_t capacity);  // for open()

 private:
  struct Region {
    std::uint64_t end = 0;
    bool released = false;
  };
  void release(std::uint64_t sequence);
  std::uint64_t push_region(std::uint64_t end, bool released);  // under mutex_; returns its sequence
  bool advance_released();                                      // under mutex_; true when `released` moved
  void tell_room();                                             // not under mutex_: on_room_ if wanted
  std::function<void()> on_room_;

  std::byte* base_ = nullptr;
  std::size_t mapped_ = 0;
  std::size_t capacity_ = 0;
  std::mutex mutex_;
  std::uint64_t expected_ = 0;           // the next record's position (the reader's)
  std::optional<RingPlacement> peeked_;  // the record peek() returned (the reader's)
  std::uint64_t peeked_length_ = 0;      // its body's length
  std::deque<Region> regions_;           // under mutex_: taken, oldest first, not yet passed by `released`
  std::uint64_t first_sequence_ = 0;     // under mutex_: the sequence number of regions_.front()
  std::uint64_t taken_ = 0;              // under mutex_: regions pushed
};

}  // namespace fast::runtime::zmq
