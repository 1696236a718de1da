#pragma once
// Adam (L2 weight decay added to the gradient) and AdamW (decoupled weight decay):
// torch.optim.Adam / AdamW without amsgrad.
//
// Per element, in float32, in torch's order; t counts steps from 1, bias corrections in double:
//   c1 = 1 - beta1^t, c2 = 1 - beta2^t
//   adam:  g = g + wd * p                (only when wd != 0)
//   adamw: p = p * (1 - lr * wd)         (only when wd != 0)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   denom = sqrt(v) / sqrt(c2) + eps
//   p = p + (-(lr / c1)) * m / denom
// One pass over params, grads and the two moment buffers per step. The multiply-adds of the wd and
// moment lines are rounded like torch's kernel on the same CPU: fused where torch runs its
// AVX2/AVX-512 kernels.

#include <cstdint>

#include "fast/core/buffer.hpp"
#include "fast/optim/optimizer.hpp"

namespace fast::optim {

class Adam final : public Optimizer {
 public:
  // options.name must be "adam" or "adamw"; the options are validated (InvalidArgument naming the
  // option otherwise). The two moment buffers are allocated here, zeroed.
  Adam(const OptimizerOptions& options, std::size_t numel);

  void step(std::span<float> params, std::span<const float> grads, double lr) override;
  // adam with weight_decay 0, and adamw: take_gradient updates m and v, apply_taken the parameters.
  bool takes_gradient_first() const override { return decoupled_ || weight_decay_ == 0; }
  bool gradient_taken() const override { return taken_; }
  void take_gradient(std::span<const float> grads) override;
  void apply_taken(std::span<float> params, double lr) override;
  std::string_view name() const override;
  std::size_t numel() const override { return numel_; }
  std::size_t state_buffers() const override { return 2; }
  std::vector<std::span<float>> state() override;
  std::int64_t steps_taken() const override { return steps_; }
  void set_steps_taken(std::int64_t steps) override;

 private:
  bool decoupled_;  // adamw
  std::size_t numel_;
  double weight_decay_;
  double beta1_;
  double beta2_;
  double eps_;
  bool fused_;  // multiply-adds rounded once, as torch's kernels on this CPU
  std::int64_t steps_ = 0;
  bool taken_ = false;       // take_gradient ran, apply_taken not yet
  core::Buffer exp_avg_;     // m, first moment
  core::Buffer exp_avg_sq_;  // v, second moment
  bool resident_ = false;    // both made resident before the first pass that writes them (Sgd's rule)
  void make_state_resident() noexcept;
};

}  // namespace fast::optim
