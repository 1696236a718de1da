#pragma once
// MpiCollectives: the mpi runtime's native collectives (fast/runtime/native_collectives.hpp):
// MPI_Allreduce (in place), MPI_Bcast, MPI_Allgather and MPI_Barrier on a communicator of their
// own (a duplicate of MPI_COMM_WORLD, so they never meet the transport's messages). Calls run in
// ticket order (reserve()), one at a time per rank, on the calling activity's thread.
//
// Failure: a rank that dies while the others are inside a collective cannot be reported by MPI
// (fail-stop): mpirun or srun ends the job and every rank's SIGTERM notice says why (session.hpp).
// Thread-safety: every method from any activity of the rank's worker.

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "fast/runtime/native_collectives.hpp"

namespace fast::runtime::mpi {

class MpiCollectives final : public NativeCollectives {
 public:
  // comm: a communicator used by nothing else (not freed here).
  // FAST_CHECK_COLLECTIVES (read once, here): whether each collective first checks that every rank
  // called it alike (collectives.cpp, agree()); every rank must be given the same value.
  explicit MpiCollectives(MPI_Comm comm);

  std::uint64_t reserve() override { return next_.fetch_add(1); }
  // Whether an activity of this rank is inside an MPI collective now (read by the transport's
  // progress thread, which polls less meanwhile: the calling thread is progressing MPI itself).
  bool inside() const { return inside_.load(std::memory_order_relaxed) > 0; }
  // When the collective running now becomes overdue: its start plus twice as long as the previous
  // collective took, within [floor, cap]. A collective that overdue may be waiting for a peer that
  // needs this rank's point-to-point service before it can enter it (the transport's progress
  // thread then polls). time_point::max() when none runs. Thread-safe (a value read while a
  // collective starts or ends may be stale: the caller reads it again after waiting).
  std::chrono::steady_clock::time_point overdue_at(std::chrono::nanoseconds floor, std::chrono::nanoseconds cap) const;
  void allreduce_sum(std::uint64_t ticket, core::MutableView data) override;
  void broadcast(std::uint64_t ticket, core::MutableView data, int root) override;
  void allgather(std::uint64_t ticket, core::ConstView in, core::MutableView out) override;
  void barrier(std::uint64_t ticket) override;

 private:
  // Waits for `ticket`'s turn, runs fn, then passes the turn on (even when fn throws).
  template <typename Fn>
  void in_turn(std::uint64_t ticket, Fn&& fn);

  MPI_Comm comm_;
  bool check_calls_ = false;
  std::atomic<std::uint64_t> next_{0};
  std::atomic<int> inside_{0};
  std::atomic<std::int64_t> entered_ns_{0};        // steady_clock at the running collective's start
  std::atomic<std::int64_t> last_duration_ns_{0};  // how long the previous collective took
  std::mutex mutex_;
  std::condition_variable cv_;
  std::uint64_t turn_ = 0;
};

}  // namespace fast::runtime::mpi
