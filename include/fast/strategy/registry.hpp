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
// MyStrategy reads them with options.get_number("my_rate"). make_strategy() validates every
// option the strategy declares against its declaration before it calls the factory, so a
// constructor receives options in their declared ranges; `check` adds only what a declaration
// cannot say (one option against another, an option against the world size).
//
// The registration also declares the strategy's traits: what the generic Worker, the training
// loop and the shared option checks know of it without making it (whether it is asynchronous,
// whether a lost worker can rejoin, whether dgc and the robust aggregates apply). No code outside
// a strategy's own file asks for a strategy by name; it asks for its traits.
//
// Options come in two kinds: the common ones (compress, aggregate, non_finite, ...), which every
// strategy takes, and each strategy's own. Several strategies may declare the same option (dpsgd
// and acid both read topology) when their declarations agree (StrategyOption::same_setting).
//
// Thread-safety: every function here may be called from any thread; registration is meant for
// start-up, before config parsing and training, since the settings a program has already listed
// (the config keys of `fast train`) do not include what is registered later.

#include <algorithm>
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

// A trait of a strategy: constant, or true when one of its options holds one of some values (ps is
// asynchronous when mode is async or ssp). A constant converts from bool, so a registration
// writes `.asynchronous = true`.
class StrategyTrait {
 public:
  StrategyTrait(bool value = false) : value_(value) {}  // NOLINT(google-explicit-constructor): `= true`
  // True when option `option` (declared by the strategy or common) holds one of `values`, as the
  // option's text (StrategyOption::text: "sync", "4", "true"). register_strategy refuses an
  // undeclared option or a value the option does not accept.
  static StrategyTrait when(std::string option, std::vector<std::string> values);

  // Its value for these options.
  bool holds(const StrategyOptions& options) const;
  // Whether it holds for some options: a constant true, or a condition.
  bool can_hold() const { return value_ || !option_.empty(); }
  // The condition in words, for messages: "" for a constant, else "with mode = async or ssp".
  std::string condition() const;
  // The condition's values for these options: "" for a constant, else "with mode = sync".
  std::string condition_for(const StrategyOptions& options) const;
  const std::string& option() const { return option_; }  // "" for a constant
  const std::vector<std::string>& values() const { return values_; }

 private:
  bool value_ = false;
  std::string option_;
  std::vector<std::string> values_;
};

// Rejoining (Worker::rejoin, docs/faults.md "Elastic asynchronous runs"): "" when a worker of rank
// `rank` (-1: any) can join the run under way in place of a lost one, else why not, as a clause
// ("compress = 'int8' keeps per-link codec references ..."). Asked only where the strategy's
// `asynchronous` trait holds: a synchronous strategy's lost worker ends the run.
using RejoinCheck = std::function<std::string(const StrategyOptions&, int rank)>;

// Periodic checkpoints of an asynchronous strategy (docs/faults.md, "Periodic checkpoints of
// asynchronous runs"): "" when a worker may save its state (Worker::save) during the run, between
// two of its own steps, while the others train on, else why not, as a clause ("with compress =
// 'int8' the links' ..."). Asked only where the strategy's `asynchronous` trait holds: lockstep
// workers save between steps they all share.
using SaveDuringRunCheck = std::function<std::string(const StrategyOptions&)>;

// Elastic synchronous training (Worker::regroup_survivors, docs/faults.md "Elastic synchronous
// training"): "" when the survivors of a lost worker can go on with these options, else why not, as
// a clause ("compress = 'int8' keeps CHOCO-gossip references per link of the whole world"). Asked only where
// the strategy's `asynchronous` trait does not hold: asynchronous runs always go on.
using ElasticCheck = std::function<std::string(const StrategyOptions&)>;
// With `elastic`: "" when the survivors can go on as a group of `group` workers, else why not (a
// topology of fixed sizes: hypercube, torus2d:RxC). Unset: every size can.
using ElasticGroupCheck = std::function<std::string(const StrategyOptions&, int group)>;

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
  StrategyCheck check;                  // optional: checks across options or against the world size
  // Traits. asynchronous: Strategy::asynchronous() of what `make` returns for these options (the
  // Worker refuses a strategy that disagrees); it decides, before the workers start, whether a run
  // goes on without a lost worker, how it is scheduled and checkpointed.
  StrategyTrait asynchronous;
  // Unset: a lost worker is never taken back. Set: Strategy::rejoin() takes a worker back where
  // it returns "".
  RejoinCheck rejoin;
  // Unset: an asynchronous run of this strategy is checkpointed at its end only (checkpoint_every
  // is refused). Set: its workers write periodic checkpoints where it returns "".
  SaveDuringRunCheck save_during_run;
  // Unset: a synchronous run of this strategy ends when a worker is lost, `elastic` or not. Set:
  // with `elastic`, the survivors agree on a new group and go on where it returns "". The strategy
  // then works over Communicator::members() (its collectives over the group, its averages over
  // group_size()), keeps no state sized by the world, and saves in Worker::save() everything a
  // member needs to continue from another member's state.
  ElasticCheck elastic;
  // Optional, with `elastic`: the group sizes it cannot go on with (elastic_group_warning).
  ElasticGroupCheck elastic_group;
  // The strategy sends gradients (not models), so Deep Gradient Compression applies (dgc = true).
  StrategyTrait sends_gradients;
  // The strategy combines every worker's whole gradient at once, so the robust aggregates
  // (aggregate = median, krum:F, ...) apply; otherwise aggregate must be mean.
  StrategyTrait robust_aggregate;
  // A step's whole update is one optimizer step, the same on every worker, on the aggregated
  // gradient that the exchange leaves in the gradient buffer; so an optimizer outside FAST (the
  // framework's own, WorkerOptions::external_optimizer) may take the place of FAST's.
  StrategyTrait external_optimizer;
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
// default that fails its own declaration, a trait's condition on an option the strategy does not
// declare or on a value that option does not accept.
void register_strategy(StrategyRegistration registration);

// A declared option with the strategies that declare it.
struct DeclaredOption {
  StrategyOption option;
  std::vector<std::string> strategies;  // in registration order; empty: common (every strategy)
  // Whether strategy `name` reads the option: it declared it, or the option is common.
  bool read_by(std::string_view name) const {
    return strategies.empty() || std::find(strategies.begin(), strategies.end(), name) != strategies.end();
  }
};

// Every declared option: the common ones, then each strategy's new ones in registration order.
std::vector<DeclaredOption> declared_options();
// The declaration named `name`, if any strategy (or the common set) declares it.
std::optional<StrategyOption> find_option(std::string_view name);
// (name, summary) of every strategy, in registration order.
std::vector<std::pair<std::string, std::string>> strategy_summaries();
// Counts registrations: a list built from the registry is stale once this has changed.
std::uint64_t registry_generation();
// The registration of strategy `name`, without its options (declared_options() has them);
// InvalidArgument listing the names for an unknown one.
StrategyRegistration find_registration(std::string_view name);
// The strategies whose `trait` can hold (and, where given, for which `also` is true), in
// registration order, each with the trait's condition, as a phrase: "allreduce and ps with mode =
// sync"; "none" when there is none.
std::string strategies_with(StrategyTrait StrategyRegistration::*trait,
                            const std::function<bool(const StrategyRegistration&)>& also = {});
// Every option that strategy `name` reads (the common ones, then its own) against its
// declaration: InvalidArgument "strategy 'NAME': option 'KEY': expected ..., got ..." for the
// first out of range, of the wrong type or refused by its check. make_strategy() and
// check_strategy_options() call it first.
void validate_declared_options(const StrategyOptions& options);
// One warning per option that strategy `options.name` reads whose value a run of `total_steps`
// steps per worker is too short for (StrategyOption::short_run): "KEY = VALUE: what the run
// misses". Empty when the run is long enough or total_steps <= 0 (unknown).
std::vector<std::string> short_run_warnings(const StrategyOptions& options, std::int64_t total_steps);

}  // namespace fast::strategy
