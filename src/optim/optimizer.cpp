#include "fast/optim/optimizer.hpp"

#include <array>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/core/suggest.hpp"
#include "fast/optim/adam.hpp"
#include "fast/optim/sgd.hpp"

namespace fast::optim {

namespace {
struct Entry {
  std::string_view name;
  std::unique_ptr<Optimizer> (*make)(const OptimizerOptions&, std::size_t);
  std::string_view reads;  // the OptimizerOptions fields its rule reads besides name, space-separated
};

std::unique_ptr<Optimizer> make_sgd(const OptimizerOptions& o, std::size_t n) { return std::make_unique<Sgd>(o, n); }
std::unique_ptr<Optimizer> make_adam(const OptimizerOptions& o, std::size_t n) { return std::make_unique<Adam>(o, n); }

// The registry: every optimizer FAST knows, by name. Sgd and Adam validate their own options.
constexpr std::array kRegistry{
    Entry{"sgd", make_sgd, "lr weight_decay"},
    Entry{"momentum", make_sgd, "lr momentum dampening weight_decay"},
    Entry{"nesterov", make_sgd, "lr momentum dampening weight_decay"},
    Entry{"adam", make_adam, "lr beta1 beta2 eps weight_decay"},
    Entry{"adamw", make_adam, "lr beta1 beta2 eps weight_decay"},
};
}  // namespace

bool optimizer_reads(std::string_view optimizer, std::string_view option) {
  for (const Entry& e : kRegistry) {
    if (e.name != optimizer) continue;
    for (std::string_view rest = e.reads; !rest.empty();) {
      const std::size_t space = rest.find(' ');
      if (rest.substr(0, space) == option) return true;
      rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    }
  }
  return false;
}

void Optimizer::take_gradient(std::span<const float> /*grads*/) {
  FAST_THROW(InvalidUsage,
             "{}: take_gradient: this rule reads the parameters or the gradient with its update (see "
             "takes_gradient_first); call step()",
             name());
}

void Optimizer::apply_taken(std::span<float> /*params*/, double /*lr*/) {
  FAST_THROW(InvalidUsage,
             "{}: apply_taken: this rule reads the parameters or the gradient with its update (see "
             "takes_gradient_first); call step()",
             name());
}

std::vector<std::string> optimizer_names() {
  std::vector<std::string> names;
  names.reserve(kRegistry.size());
  for (const Entry& e : kRegistry) names.emplace_back(e.name);
  return names;
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& options, std::size_t numel) {
  for (const Entry& e : kRegistry)
    if (e.name == options.name) return e.make(options, numel);
  FAST_THROW(InvalidArgument, "OptimizerOptions.name: unknown optimizer '{}'{}, expected one of {}", options.name,
             core::did_you_mean(options.name, optimizer_names()), fmt::join(optimizer_names(), ", "));
}

}  // namespace fast::optim
