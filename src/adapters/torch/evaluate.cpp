#include "fast/adapters/torch/evaluate.hpp"

#include <torch/types.h>

#include "fast/core/error.hpp"

namespace fast::torch {

EvalResult evaluate(Model& model, const Dataset& data, std::int64_t batch) {
  FAST_ENFORCE(batch >= 0, "evaluate: expected batch >= 1 (or 0: the default), got {}", batch);
  const std::int64_t n = data.size();
  FAST_ENFORCE(n > 0, "evaluate: expected a non-empty dataset, got 0 samples");
  ::torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.train(false);
  double loss_sum = 0;
  std::int64_t correct = 0;
  const ::torch::Device device = model.device();  // the batches go where the model is (no copy on the CPU)
  if (batch == 0) batch = device.is_cpu() ? kCpuEvalBatch : kDeviceEvalBatch;
  try {
    for (std::int64_t start = 0; start < n; start += batch) {
      const std::int64_t count = std::min(batch, n - start);
      const ::torch::Tensor x = data.features(start, count).to(device);
      const ::torch::Tensor y = data.labels.narrow(0, start, count).to(device);
      const ::torch::Tensor logits = model.forward(x);
      FAST_ENFORCE(logits.dim() == 2 && logits.size(0) == count,
                   "evaluate: expected logits of shape [{}, classes], got {}", count, fmt::join(logits.sizes(), "x"));
      loss_sum += ::torch::nll_loss(::torch::log_softmax(logits, 1), y, {}, ::at::Reduction::Sum).item<double>();
      correct += logits.argmax(1).eq(y).sum().item<std::int64_t>();
    }
  } catch (...) {
    model.train(was_training);
    throw;
  }
  model.train(was_training);
  return {.accuracy = static_cast<double>(correct) / static_cast<double>(n),
          .loss = loss_sum / static_cast<double>(n),
          .samples = n};
}

}  // namespace fast::torch
