#pragma once
// bulk_float_tensor: the storage of a dataset's features (fashion_mnist.cpp, tensor_dataset.cpp).

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace fast::torch {

// An uninitialised float32 tensor of `sizes` (each >= 0), owned by the tensor (its deleter unmaps
// the memory). From 8 MiB (core::kAlignedRunMinBytes) it is mapped on its own, 2 MiB-aligned, asks
// for transparent huge pages (core::map_pages) and is populated in one call: Fashion-MNIST's 31 MB
// of test features (and the features of a large .npz/.npy dataset) otherwise take one page fault
// per 4 KiB, a cost every process that loads them pays in system time (docs/data.md). Where the
// kernel declines either advice the pages fault in as usual; where the mapping fails it is
// torch::empty. Thread-safe (core::map_pages is).
::torch::Tensor bulk_float_tensor(const std::vector<std::int64_t>& sizes);

}  // namespace fast::torch
