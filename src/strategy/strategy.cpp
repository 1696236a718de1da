#include "fast/strategy/strategy.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/compress/codec.hpp"
#include "fast/core/error.hpp"
#include "fast/core/finite.hpp"
#include "fast/core/log.hpp"
#include "fast/strategy/acid.hpp"
#include "fast/strategy/adpsgd.hpp"
#include "fast/strategy/allreduce.hpp"
#include "fast/strategy/dpsgd.hpp"
#include "fast/strategy/easgd.hpp"
#include "fast/strategy/gosgd.hpp"
#include "fast/strategy/local_sgd.hpp"
#include "fast/strategy/ps.hpp"

namespace fast::strategy {

namespace {
using Factory = std::function<std::unique_ptr<Strategy>(const StrategyOptions&, collective::Communicator&)>;

// The registry: every strategy by name. A new strategy adds one line here.
const std::vector<std::pair<std::string, Factory>>& registry() {
  // In documentation order: from synchronous to asynchronous, central to decentralized.
  static const std::vector<std::pair<std::string, Factory>> entries{
      {"allreduce",
       [](const StrategyOptions& o, collective::Communicator& c) { return std::make_unique<AllreduceStrategy>(o, c); }},
      {"ps",
       [](const StrategyOptions& o, collective::Communicator& c) { return std::make_unique<PsStrategy>(o, c); }},
      {"local-sgd",
       [](const StrategyOptions& o, collective::Communicator& c) { return std::make_unique<LocalSgdStrategy>(o, c); }},
      {"easgd",
       [](const StrategyOptions& o, collective::Communicator& c) { return std::make_unique<EasgdStrategy>(o, c); }},
      {"dpsgd",
       [](const StrategyOptions& o, collective::Communicator& c) { return std::make_unique<DpsgdStrategy>(o, c); }},
      {"adpsgd",
       [](const StrategyOptions& o, collective::Communicator& c) { return std::make_unique<AdpsgdStrategy>(o, c); }},
      {"gosgd",
       [](const StrategyOptions& o, collective::Communicator& c) { return std::make_unique<GosgdStrategy>(o, c); }},
      {"acid",
       [](const StrategyOptions& o, collective::Communicator& c) { return std::make_unique<AcidStrategy>(o, c); }},
  };
  return entries;
}
}  // namespace

void Strategy::representative(ModelState state, std::span<float> out) {
  FAST_ENFORCE_EQ(out.size(), state.params.size(), "representative: output length must equal the parameter count");
  std::copy(state.params.begin(), state.params.end(), out.begin());
  comm_.allreduce(core::MutableView(out), {.op = collective::ReduceOp::avg});
}

bool Strategy::apply_update(const StepInput& input, NonFinitePolicy policy) {
  if (core::all_finite(input.state.grads)) {
    input.optimizer.step(input.state.params, input.state.grads, input.lr);
    return true;
  }
  const int rank = comm_.rank();
  if (policy == NonFinitePolicy::error)
    FAST_THROW(core::InvalidArgument, "{}: the gradient of step {} on worker {} holds NaN or infinity", name(),
               input.step, rank);
  core::log(core::LogLevel::warn, "{}: worker {} skipped step {}: its gradient holds NaN or infinity", name(), rank,
            input.step);
  return false;
}

std::vector<float> Strategy::common_start(ModelState state) {
  comm_.broadcast(core::MutableView(state.params), 0);
  return {state.params.begin(), state.params.end()};
}

bool Strategy::compresses(const StrategyOptions& options) {
  return compress::make_codec(options.compress)->name() != "none";
}

collective::WindowOptions Strategy::codec_window(const StrategyOptions& options, const core::Layout* layout) {
  return {.codec = options.compress, .seed = options.seed, .layout = layout, .meter = &meter_};
}

double default_consensus_step(const std::string& codec) {
  const std::string name = codec.substr(0, codec.find(':'));
  if (name == "none" || name == "fp16" || name == "bf16") return 1.0;
  if (name == "int8") return 0.8;
  if (name == "sign") return 0.4;
  return 0.05;  // topk, randk, threshold, powersgd
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

std::unique_ptr<Strategy> make_strategy(const StrategyOptions& options, collective::Communicator& comm) {
  for (const auto& [name, factory] : registry())
    if (name == options.name) return factory(options, comm);
  FAST_THROW(core::InvalidArgument, "strategy: unknown name '{}'; expected one of: {}", options.name,
             fmt::join(strategy_names(), ", "));
}


}  // namespace fast::strategy
