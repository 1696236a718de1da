#pragma once
// Stochastic gradient descent, plain or with (Nesterov) momentum: torch.optim.SGD's rule.
//
// Per element, in float32, in torch's order (wd = weight_decay, mu = momentum, tau = dampening):
//   d = g + wd * p                       (only when wd != 0)
//   momentum, nesterov: b = d on the first step, else b = mu * b + (1 - tau) * d
//   momentum: d = b;   nesterov: d = d + mu * b
//   p = p + (-lr) * d
// One pass over params, grads and the momentum buffer per step. Each "x + a * y" is rounded like
// torch's kernel on the same CPU: fused (one rounding) where torch runs its AVX2/AVX-512 kernels.

#include <cstdint>

#include "fast/core/buffer.hpp"
#include "fast/optim/optimizer.hpp"

namespace fast::optim {

class Sgd final : public Optimizer {
 public:
  // options.name must be "sgd", "momentum" or "nesterov"; the options are validated
  // (InvalidArgument naming the option otherwise). The momentum buffer is allocated here.
  Sgd(const OptimizerOptions& options, std::size_t numel);

  void step(std::span<float> params, std::span<const float> grads, double lr) override;
  // momentum with weight_decay 0: take_gradient updates the buffer b, apply_taken does p = p + (-lr) * b.
  bool takes_gradient_first() const override { return kind_ == Kind::momentum && weight_decay_ == 0; }
  bool gradient_taken() const override { return taken_; }
  void take_gradient(std::span<const float> grads) override;
  void apply_taken(std::span<float> params, double lr) override;
  std::string_view name() const override;
  std::size_t numel() const override { return numel_; }
  std::size_t state_buffers() const override { return kind_ == Kind::plain ? 0 : 1; }
  std::vector<std::span<float>> state() override;
  std::int64_t steps_taken() const override { return steps_; }
  void set_steps_taken(std::int64_t steps) override;

 private:
  enum class Kind { plain, momentum, nesterov };
  Kind kind_;
  std::size_t numel_;
  double weight_decay_;
  double momentum_;
  double dampening_;
  bool fused_;  // multiply-adds rounded once, as torch's kernels on this CPU
  std::int64_t steps_ = 0;
  bool taken_ = false;   // take_gradient ran, apply_taken not yet
  core::Buffer buffer_;  // momentum buffer (empty for plain SGD)
  // Made resident in one call before the first pass that writes it (make_state_resident), not when
  // allocated: a worker whose optimizer never steps (ps's workers: the servers step) holds none of
  // it, one that does holds all of it from its first step on.
  bool resident_ = false;
  void make_state_resident() noexcept;
};

}  // namespace fast::optim
