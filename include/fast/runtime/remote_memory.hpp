#pragma once
// RemoteMemory: an optional capability of a Context (Context::remote_memory) through which a worker
// reads and writes memory that other workers exposed, without any activity of theirs taking part:
// the mpi runtime offers it on MPI RMA (passive target: MPI_Win_create over the caller's memory,
// exclusive MPI_Win_lock). The one-sided windows (fast/collective/window.hpp) use it where it is
// offered instead of their owner's service activity, so an owner busy computing delays nobody.
//
// Use:
//   auto region = memory->expose(base, bytes);   // collective: every worker of the world
//   region->acquire(owner);                      // owner's memory, for this worker alone
//                                                // (Access::shared: for readers only)
//   region->read(owner, offset, dst, n);         // complete when it returns
//   region->write(owner, offset, src, n);        // complete at the owner by release()
//   region->add_to_counter(owner, 1);            // the owner's 64-bit counter (a version)
//   region->release(owner);
//   region->close();                             // collective
// A worker reaches its own memory the same way, or acquires itself and then loads and stores
// through its own pointer directly until it releases itself.
//
// Atomicity: between acquire(owner) and release(owner) no other worker, and no other activity of
// this worker, holds owner's region, so a read-modify-write in between is atomic. A shared
// acquisition (Access::shared) may be held by several workers at once but never beside an
// exclusive one: what a shared holder reads is a state between two exclusive holders' changes;
// it must not write (add_to_counter with 0 reads the counter). A worker holds
// one owner at a time per activity; acquiring an owner it already holds on the same activity
// deadlocks.
//
// Order: every worker calls expose() and close() in the same order relative to each other and to
// the Communicator's collectives (as Window constructors and close() are), from one activity at a
// time. Offsets and sizes are in bytes; a read or write outside the owner's exposed bytes is an
// InvalidArgument, checked before anything moves.
//
// Statistics: a write counts as a message of its bytes sent to the owner and a read as one
// received from it, in this worker's Context::link_stats only (the owner took no part).
//
// Thread-safety: every method from any activity of the worker. Failure: the runtime's error (the
// mpi runtime: IoError with MPI's text); MPI is fail-stop, so a lost owner ends the whole run.

#include <cstddef>
#include <cstdint>
#include <memory>

namespace fast::runtime {

class RemoteRegion {
 public:
  enum class Access : std::uint8_t { exclusive, shared };
  // Without close() (an error unwinds): frees nothing collective; the memory must still stay valid
  // while others may reach it, which a failed run does not wait for.
  virtual ~RemoteRegion() = default;
  // Blocks until this worker holds owner's region: alone (exclusive), or with other readers only.
  virtual void acquire(int owner, Access access = Access::exclusive) = 0;
  // Completes this worker's writes at the owner, then lets others acquire it.
  virtual void release(int owner) = 0;
  // Between acquire(owner) and release(owner): dst = owner's bytes [offset, offset + bytes).
  virtual void read(int owner, std::size_t offset, void* dst, std::size_t bytes) = 0;
  // Between acquire(owner) and release(owner): owner's bytes [offset, ...) = src. src must stay
  // unchanged until release(owner).
  virtual void write(int owner, std::size_t offset, const void* src, std::size_t bytes) = 0;
  // Between acquire(owner) and release(owner): owner's counter += add (it starts at 0); returns the
  // value before. add = 0 reads it.
  virtual std::uint64_t add_to_counter(int owner, std::uint64_t add) = 0;
  // Collective: returns once every worker closed the region; nobody reaches it afterwards.
  virtual void close() = 0;
};

class RemoteMemory {
 public:
  virtual ~RemoteMemory() = default;
  // Collective over the whole world: exposes this worker's [base, base + bytes) (bytes may be 0),
  // which must stay valid until the region is closed. Returns this worker's handle on every
  // worker's region.
  virtual std::unique_ptr<RemoteRegion> expose(void* base, std::size_t bytes) = 0;
};

}  // namespace fast::runtime
