#pragma once
// The strategy registry: every strategy by name, with its factory, the options it reads (their
// declarations: option.hpp) and its option checks. make_strategy() builds strategies from it;
// `fast train` generates its strategy config keys, flags, --help and docs/config.md from it.
//
// The built-in strategies register themselves, each through one registration function in its own
// file (src/strategy/<name>.cpp), the first time the registry is used. A program adds its own
// with register_strategy() before it parses a config or makes a strategy:
//
//   fast::strategy::register_strategy({
//       .name = "my-strategy", .summary = "what it does, in a few words",
//       .make = fast::strategy::factory_of<MyStrategy>(),   // MyStrategy(const StrategyOptions&, Communicator&)
//       .options = {fast::strategy::StrategyOption::number("my_rate", 0.5, "the rate of ...").greater_than(0)}});
//
// Its options then are config keys (my_rate = 0.25), flags (--my-rate 0.25) and --help lines, and
// MyStrategy reads them with options.get_number("my_rate").
//
// Options come in two kinds: the common ones (compress, aggregate, non_finite, ...), which every
// strategy takes, and each strategy's own. Several strategies may declare the same option (dpsgd
// and acid both read topology) when their declarations agree (StrategyOption::same_setting).
//
// Thread-safety: every function here may be called from any thread; registration is meant for
// start-up, before config parsing and training, since the settings a program has already listed
// (the config keys of `fast train`) do not include what is registered later.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fast/collective/communicator.hpp"
#include "fast/strategy/option.hpp"
#include "fast/strategy/strategy.hpp"

namespace fast::strategy {

// Builds one worker's strategy; may throw InvalidArgument for options it refuses.
using StrategyFactory = std::function<std::unique_ptr<Strategy>(const StrategyOptions&, collective::Communicator&)>;
// The checks of a strategy's options that need only the world size (`fast train` runs them
// before it reads any data); InvalidArgument naming the option.
using StrategyCheck = std::function<void(const StrategyOptions&, int workers)>;

struct StrategyRegistration {
  std::string name;                     // the value of `strategy`: lowercase letters, digits and '-'
  std::string summary;                  // a few words for the help of `strategy`
  StrategyFactory make;                 // required
  std::vector<StrategyOption> options;  // the options it reads beyond the common ones
  StrategyCheck check;                  // optional
};

// The factory of a strategy class constructible from (const StrategyOptions&, Communicator&).
template <typename S>
StrategyFactory factory_of() {
  return [](const StrategyOptions& o, collective::Communicator& c) -> std::unique_ptr<Strategy> {
    return std::make_unique<S>(o, c);
  };
}

// Adds a strategy after those registered before. InvalidArgument, registering nothing, for: a name
// taken or malformed, no factory, an option name malformed or given twice, an option that
// redeclares a common option or differs from another strategy's declaration of the same name, a
// default that fails its own declaration.
void register_strategy(StrategyRegistration registration);

// A declared option with the strategies that declare it.
struct DeclaredOption {
  StrategyOption option;
  std::vector<std::string> strategies;  // in registration order; empty: common (every strategy)
};

// Every declared option: the common ones, then each strategy's new ones in registration order.
std::vector<DeclaredOption> declared_options();
// The declaration named `name`, if any strategy (or the common set) declares it.
std::optional<StrategyOption> find_option(std::string_view name);
// (name, summary) of every strategy, in registration order.
std::vector<std::pair<std::string, std::string>> strategy_summaries();
// Counts registrations: a list built from the registry is stale once this has changed.
std::uint64_t registry_generation();

}  // namespace fast::strategy
