#pragma once
// NativeCollectives: a runtime's own implementation of the Communicator's world-wide collectives
// (the mpi runtime: MPI_Allreduce, MPI_Bcast, MPI_Allgather, MPI_Barrier), an optional capability
// a Context may offer (Context::native_collectives). Where it is offered, the Communicator calls it
// instead of its ring for collectives over the whole world; over a smaller group (after
// exclude_lost) it keeps its own algorithms.
//
// Order: every worker issues native collectives in the same order. Several activities of one
// worker may issue them concurrently: each call first takes its place with reserve() on the
// issuing thread (in issue order), then runs with that ticket; the implementation runs tickets in
// order, so concurrent activities can never cross two collectives between workers.
//
// Thread-safety: reserve() and the collectives may be called from every activity of the worker.
// Failure: the runtime's error (PeerLost, RemoteError) or InvalidArgument for a bad argument,
// checked before anything is sent.

#include <cstdint>

#include "fast/core/tensor_view.hpp"

namespace fast::runtime {

class NativeCollectives {
 public:
  virtual ~NativeCollectives() = default;
  // The next place in this worker's order of native collectives.
  virtual std::uint64_t reserve() = 0;
  // In place: data = sum over every worker of data (f32 or f64; another dtype: InvalidArgument,
  // after the check that every rank called it alike where that check is on). Blocking.
  virtual void allreduce_sum(std::uint64_t ticket, core::MutableView data) = 0;
  // data on every worker = data of worker `root` (any dtype). Blocking.
  virtual void broadcast(std::uint64_t ticket, core::MutableView data, int root) = 0;
  // out = concatenation of every worker's `in`, in rank order. Blocking.
  virtual void allgather(std::uint64_t ticket, core::ConstView in, core::MutableView out) = 0;
  // Returns once every worker entered it.
  virtual void barrier(std::uint64_t ticket) = 0;
};

}  // namespace fast::runtime
