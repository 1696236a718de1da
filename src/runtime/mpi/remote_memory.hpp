#pragma once
// MpiRemoteMemory: the mpi runtime's RemoteMemory (fast/runtime/remote_memory.hpp) on MPI RMA with
// a passive target. expose() creates two MPI windows on a communicator of their own: one over the
// caller's memory (MPI_Win_create: the exposed tensor stays where its owner keeps it) and one of a
// 64-bit counter per rank (MPI_Win_allocate). acquire(owner) is MPI_Win_lock(MPI_LOCK_EXCLUSIVE)
// (Access::shared: MPI_LOCK_SHARED) on owner's data window, read is MPI_Get + MPI_Win_flush, write MPI_Put,
// add_to_counter MPI_Fetch_and_op under a shared lock of the counter window, release MPI_Win_unlock. On one host
// OpenMPI's `osc rdma` moves the bytes with single-copy loads and stores into the owner's memory
// (no activity of the owner runs); between hosts, the fabric's RDMA.
//
// Availability: where MPI finds no one-sided component for the job (OpenMPI's `osc pt2pt` refuses
// MPI_THREAD_MULTIPLE), MPI_Win_create fails on every rank; expose() then returns null on every
// rank, after a warning, and the windows keep FAST's service activity.
//
// Ranks take turns per owner inside a rank too (MPI allows one lock per target and process): an
// std::mutex per owner, held from acquire to release.
//
// Thread-safety: expose() and close() serialise on one mutex (and must come in the same order on
// every rank: RemoteMemory's contract); the rest from any thread.

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "../engine/op.hpp"
#include "fast/runtime/remote_memory.hpp"

namespace fast::runtime::mpi {

class MpiRemoteMemory final : public RemoteMemory {
 public:
  // comm: a communicator used by nothing else (not freed here); rank and size: this rank's in it.
  MpiRemoteMemory(MPI_Comm comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  // Where the traffic is counted: the per-peer counters of this rank's worker (set once, before
  // the worker runs any one-sided operation).
  void count_into(engine::LinkCounters* counters) { counters_.store(counters, std::memory_order_release); }
  std::unique_ptr<RemoteRegion> expose(void* base, std::size_t bytes) override;

 private:
  friend class MpiRegion;
  MPI_Comm comm_;
  int rank_;
  int size_;
  std::mutex collective_mutex_;  // expose() and close(): one at a time
  std::atomic<engine::LinkCounters*> counters_{nullptr};
  bool warned_ = false;  // guarded by collective_mutex_
};

class MpiRegion final : public RemoteRegion {
 public:
  MpiRegion(MpiRemoteMemory& memory, MPI_Win data, MPI_Win counters, std::vector<std::uint64_t> sizes);
  ~MpiRegion() override;
  void acquire(int owner, Access access = Access::exclusive) override;
  void release(int owner) override;
  void read(int owner, std::size_t offset, void* dst, std::size_t bytes) override;
  void write(int owner, std::size_t offset, const void* src, std::size_t bytes) override;
  std::uint64_t add_to_counter(int owner, std::uint64_t add) override;
  void close() override;

 private:
  void check_range(const char* what, int owner, std::size_t offset, std::size_t bytes) const;
  engine::LinkCounters* counters_of(int owner) const;

  MpiRemoteMemory& memory_;
  MPI_Win data_;
  MPI_Win counters_;
  std::vector<std::uint64_t> sizes_;     // every rank's exposed bytes
  std::unique_ptr<std::mutex[]> turns_;  // per owner: this rank's activities take turns
  bool closed_ = false;
};

}  // namespace fast::runtime::mpi
