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

// Runs model on every sample of data in chunks of `batch`, under NoGradGuard and in eval mode
// (the previous training mode is restored). Does not touch gradients. InvalidArgument when batch
// < 1 or data is empty. Not thread-safe for one model; different models may be evaluated at once.
EvalResult evaluate(Model& model, const Dataset& data, std::int64_t batch = 1000);

}  // namespace fast::torch
