#include "check.hpp"

#include <cmath>
#include <functional>

#include "fast/core/error.hpp"

namespace fast::optim::detail {

void check_option(bool ok, std::string_view owner, std::string_view option, std::string_view rule,
                  std::string_view expected, double got) {
  // The option first: it is also the `fast train` setting's name (beta1, momentum, step_size, ...).
  if (!ok)
    FAST_THROW(InvalidArgument, "{} ({}; {}.{}): expected {}, got {}", option, rule, owner, option, expected, got);
}

void check_step(std::string_view optimizer, std::span<const float> params, std::span<const float> grads,
                std::size_t numel, double lr) {
  if (params.size() != numel || grads.size() != numel)
    FAST_THROW(InvalidArgument,
               "{} step: params has {} elements and grads {}, expected both to have the optimizer's {}", optimizer,
               params.size(), grads.size(), numel);
  check_lr(optimizer, "step", lr);
  // Pointer order through std::less, which is total even across unrelated objects.
  const std::less<const float*> before;
  if (numel > 0 && before(params.data(), grads.data() + numel) && before(grads.data(), params.data() + numel))
    FAST_THROW(InvalidArgument, "{} step: params and grads overlap; they must be distinct buffers", optimizer);
}

void check_lr(std::string_view optimizer, std::string_view call, double lr) {
  if (!(std::isfinite(lr) && lr >= 0))
    FAST_THROW(InvalidArgument, "{} {}: lr: expected a finite value >= 0, got {}", optimizer, call, lr);
}

void check_split(std::string_view optimizer, std::string_view call, std::string_view what, std::span<const float> data,
                 std::size_t numel, bool taken, bool expected) {
  if (taken != expected)
    FAST_THROW(InvalidUsage, "{} {}: {}", optimizer, call,
               taken ? "the gradient taken before was not applied yet (call apply_taken first)"
                     : "no gradient taken (call take_gradient first)");
  if (data.size() != numel)
    FAST_THROW(InvalidArgument, "{} {}: {} has {} elements, expected the optimizer's {}", optimizer, call, what,
               data.size(), numel);
}

}  // namespace fast::optim::detail
