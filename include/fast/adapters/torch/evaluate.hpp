#pragma once
// Evaluation of a classifier on a dataset.

#include <cstdint>

#include "fast/adapters/torch/fashion_mnist.hpp"
#include "fast/adapters/torch/model.hpp"

namespace fast::torch {

struct EvalResult {
  double accuracy = 0;       // fraction of samples whose arg-max logit is the label, in [0, 1]
  double loss = 0;           // mean cross-entropy (natural log) over the samples
  std::int64_t samples = 0;  // number of samples evaluated (data.size())
};

// Samples per forward pass of an evaluation by default: on the CPU few enough that a convolutional
// model's activations stay below glibc's largest mmap threshold (32 MiB) and come from the heap's
// reused memory, not fresh pages each pass, also where malloc is not tuned (FAST_MALLOC=system, a
// Python loop without fast.tune_malloc; malloc_tuning.hpp): a 1,000-sample chunk of the built-in
// cnn took 4x as long, in page faults. On an accelerator, where memory comes from its caching
// allocator, more per pass.
inline constexpr std::int64_t kCpuEvalBatch = 64;
inline constexpr std::int64_t kDeviceEvalBatch = 1000;

// Runs model on every sample of data in chunks of `batch` (0: kCpuEvalBatch where the model is on
// the CPU, else kDeviceEvalBatch), under NoGradGuard and in eval mode (the previous training mode
// is restored). Does not touch gradients. The accuracy does not depend on the chunks; the loss,
// summed per chunk in float, in its last bits. InvalidArgument when batch < 0 or data is empty.
// Not thread-safe for one model; different models may be evaluated at once.
EvalResult evaluate(Model& model, const Dataset& data, std::int64_t batch = 0);

}  // namespace fast::torch
