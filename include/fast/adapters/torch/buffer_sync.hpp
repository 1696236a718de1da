#pragma once
// BufferSync: keeps one worker's model buffers (BatchNorm's running statistics) in step with the
// other workers' after every step, per a BufferPolicy (buffer_policy.hpp): broadcast (the group's first member's: rank 0 until lost),
// average (the mean of floating-point buffers; integer ones rank 0's) or local (nothing).
//
// The buffers are gathered into one flat host array per dtype class (floating point as float64,
// so float32 and float64 buffers average exactly as their dtype rounds; integers as int64) and
// exchanged with one collective each, then written back into the module's tensors in place
// (wherever they live: a GPU model's buffers are copied to the host and back).
//
// Ownership: refers to the Model's buffer tensors (shared TensorImpls), which must outlive it.
// Thread-safety: one per worker, used by that worker's thread. sync() is collective: every worker
// of the communicator calls it at the same point with the same architecture (the same buffers);
// a communicator failure propagates (PeerLost, RemoteError) with the buffers unchanged or rank 0's.

#include <cstdint>
#include <vector>

#include "fast/adapters/torch/buffer_policy.hpp"
#include "fast/adapters/torch/model.hpp"
#include "fast/collective/communicator.hpp"

namespace fast::torch {

class BufferSync {
 public:
  // The buffers of `model` under `policy` (automatic is refused: resolve it first). Buffers of a
  // dtype that is neither floating point nor integral (bool, complex) are refused with
  // InvalidArgument naming the buffer.
  BufferSync(Model& model, BufferPolicy policy);

  // Collective: applies the policy. Nothing for local or a model without buffers.
  void sync(collective::Communicator& comm);

  BufferPolicy policy() const noexcept { return policy_; }
  std::size_t count() const noexcept { return floating_.size() + integral_.size(); }

 private:
  BufferPolicy policy_;
  std::vector<NamedTensor> floating_, integral_;
  std::vector<double> floats_;      // the floating-point buffers, flattened
  std::vector<std::int64_t> ints_;  // the integral ones
};

}  // namespace fast::torch
