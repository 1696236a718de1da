#pragma once
// Optimizers on flat float32 buffers: the update step FAST owns after the framework's backward pass.
//
// An Optimizer is built for one flat parameter buffer of a fixed number of elements and owns its
// state (momentum buffer, Adam moments), sized at construction. step() applies one update in place;
// its semantics and float32 operation order are those of torch.optim (SGD, Adam, AdamW), so a FAST
// replica follows libtorch's own optimizer on the same gradients (tests/adapters/torch/optim_parity_test).
// The learning rate is an argument of each step (an LrSchedule gives it); OptimizerOptions::lr is the
// base rate the schedule scales. docs/optimizers.md states every update rule.
//
// Thread-safety: one Optimizer per replica; not synchronised. step() does not allocate.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fast::optim {

// Options of every optimizer, filled with designated initializers. An optimizer reads only the
// options of its rule (listed per field); the others are ignored and not validated.
struct OptimizerOptions {
  std::string name = "sgd";   // one of optimizer_names(): "sgd", "momentum", "nesterov", "adam", "adamw"
  double lr = 0.01;           // base learning rate, >= 0 (the schedule scales it; step() takes the rate)
  double momentum = 0.9;      // momentum, nesterov: > 0 ("sgd" is plain SGD and ignores it)
  double dampening = 0.0;     // momentum: in [0, 1]; nesterov: must be 0 (torch semantics)
  double weight_decay = 0.0;  // >= 0; L2 added to the gradient for sgd, momentum, nesterov, adam;
                              // decoupled (param *= 1 - lr * weight_decay) for adamw
  double beta1 = 0.9;         // adam, adamw: first-moment decay, in [0, 1)
  double beta2 = 0.999;       // adam, adamw: second-moment decay, in [0, 1)
  double eps = 1e-8;          // adam, adamw: added to the bias-corrected root of the second moment, > 0
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // params -= update(grads), in place, with learning rate lr (>= 0, finite) for this step.
  // Both spans must have numel() elements and must not overlap; InvalidArgument otherwise (before
  // any state changes). Gradients are not checked for NaN/Inf here: callers reject them upstream.
  virtual void step(std::span<float> params, std::span<const float> grads, double lr) = 0;
  // The same step in two calls, for a caller that needs the gradient's storage between them
  // (dpsgd's gossip sums its neighbours' models there): take_gradient(grads) updates the state
  // from the gradient, which is not read again; apply_taken(params, lr) then updates the
  // parameters from the state. Together they are bitwise equal to step(params, grads, lr) on the
  // parameters as apply_taken finds them. Only where takes_gradient_first(): the rule's state
  // update reads no parameter and its update direction lies in its state (momentum with no
  // weight decay; adam with none; adamw, whose decay applies to the parameters). Otherwise, or
  // out of order (take, apply, take, ...), InvalidUsage; a span of the wrong length or an invalid
  // lr, InvalidArgument, before any state changes.
  virtual bool takes_gradient_first() const { return false; }
  // Whether a gradient was taken and not applied yet: the state is then partway through a step
  // (a caller whose exchange failed between the two calls cannot step or save again).
  virtual bool gradient_taken() const { return false; }
  virtual void take_gradient(std::span<const float> grads);
  virtual void apply_taken(std::span<float> params, double lr);
  // The registry name this optimizer was made under ("sgd", "momentum", ...).
  virtual std::string_view name() const = 0;
  // Number of float32 elements of the parameter buffer it was built for.
  virtual std::size_t numel() const = 0;
  // Number of numel()-sized float32 state buffers one step() reads and writes (plain sgd 0,
  // momentum and nesterov 1, adam and adamw 2).
  virtual std::size_t state_buffers() const = 0;
  // Checkpoints (docs/faults.md "Checkpoints and resume"): the state buffers, state_buffers() of
  // them, numel() floats each, in a fixed order (momentum, nesterov: the momentum buffer; adam,
  // adamw: the first then the second moment), owned by the optimizer and valid for its lifetime;
  // and the number of step() calls so far (Adam's bias correction, the first momentum step). An
  // optimizer whose buffers and step count are set to another's saved values continues exactly as
  // that one would.
  virtual std::vector<std::span<float>> state() = 0;
  virtual std::int64_t steps_taken() const = 0;
  // InvalidArgument for a negative count. Also forgets a gradient taken and not applied
  // (take_gradient): the caller sets the whole state, as a restore from a checkpoint does.
  virtual void set_steps_taken(std::int64_t steps) = 0;
  // Bytes one step() streams through memory: parameters read and written, gradients read, each
  // state buffer read and written (runtime::Context::memory_traffic).
  double step_traffic_bytes() const {
    return static_cast<double>(numel() * sizeof(float)) * (3.0 + 2.0 * static_cast<double>(state_buffers()));
  }
};

// The names make_optimizer accepts, in registry order.
std::vector<std::string> optimizer_names();
// Whether the optimizer registered as `optimizer` reads the OptimizerOptions field named `option`
// ("beta1", "momentum", ...; false for an unknown optimizer or field): a setting it does not read
// changes nothing (the settings name it in a warning).
bool optimizer_reads(std::string_view optimizer, std::string_view option);

// The optimizer options.name selects, for a buffer of numel elements, its state zeroed.
// InvalidArgument for an unknown name (the message lists the allowed names) or an invalid option
// of that optimizer (the message names the option, the expected range and the value got).
std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& options, std::size_t numel);

}  // namespace fast::optim
