#pragma once
// Where a worker computes: `fast train --device` (TrainOptions::device), docs/gpu.md.
//
//   cpu      every worker on the host's cores (the default)
//   cuda     worker r on GPU r mod (GPUs visible to its process)
//   cuda:K   every worker of the process on GPU K
//
// A worker on a GPU keeps its model, the flat parameter and gradient buffers its module is
// re-pointed into, and its batches on the device (Replica, `Placement::staged`); the strategy,
// the codecs and the runtimes see host copies of the flat buffers, refreshed once per step (the
// gradient after the backward pass, the parameters before the next forward pass). The core and the
// runtimes stay free of CUDA: only this adapter knows where a tensor lives.
//
// Thread-safety: the functions are pure, apart from asking libtorch how many GPUs it sees.

#include <string>

#include <torch/types.h>

namespace fast::torch {

// The device spec as written (cpu, cuda, cuda:K) checked against what this process's libtorch
// offers, before any data is read: InvalidArgument naming `option` ("device"), the spec and what
// is expected, for a malformed spec ("gpu", "cuda:x", "cuda:-1"), for cuda when libtorch has no CUDA
// or sees no GPU, and for cuda:K with K at or beyond the GPUs it sees.
void check_device(const std::string& spec, const char* option = "device");

// The device of worker `rank` under a spec check_device() accepted.
::torch::Device worker_device(const std::string& spec, int rank);

}  // namespace fast::torch
