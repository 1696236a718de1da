#include "fast/strategy/registry.hpp"

#include <algorithm>
#include <mutex>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "builtin.hpp"
#include "fast/core/error.hpp"
#include "fast/core/suggest.hpp"

namespace fast::strategy {

namespace {

bool well_formed(std::string_view name, char separator) {
  if (name.empty() || name.front() < 'a' || name.front() > 'z') return false;
  return std::all_of(name.begin(), name.end(), [separator](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == separator;
  });
}

// The registry: strategies in registration order and every declared option, the common ones
// first. One instance, built with the built-in strategies on first use; every member locks.
class Registry {
 public:
  static Registry& instance() {
    static Registry registry;
    return registry;
  }

  void add(StrategyRegistration r) {
    const std::lock_guard lock(mutex_);
    check(r);
    for (StrategyOption& o : r.options) {
      DeclaredOption* known = find(o.name());
      if (known != nullptr) {
        known->strategies.push_back(r.name);
      } else {
        options_.push_back({std::move(o), {r.name}});
      }
    }
    r.options.clear();  // kept once, in options_
    strategies_.push_back(std::move(r));
    ++generation_;
  }

  // The registration of strategy `name` without its options (a copy: its functions run without
  // the lock, and may make strategies themselves); InvalidArgument listing the names for an
  // unknown one.
  StrategyRegistration entry(std::string_view name) {
    const std::lock_guard lock(mutex_);
    for (const StrategyRegistration& r : strategies_)
      if (r.name == name) return r;
    FAST_THROW(core::InvalidArgument, "strategy: unknown name '{}'{}; expected one of: {}", name,
               core::did_you_mean(name, names_locked()), fmt::join(names_locked(), ", "));
  }

  std::vector<StrategyRegistration> registrations() {
    const std::lock_guard lock(mutex_);
    return strategies_;
  }

  // The declarations of the options strategy `name` reads: the common ones, then its own.
  std::vector<StrategyOption> options_of(std::string_view name) {
    const std::lock_guard lock(mutex_);
    std::vector<StrategyOption> out;
    for (const DeclaredOption& d : options_)
      if (d.strategies.empty() || std::find(d.strategies.begin(), d.strategies.end(), name) != d.strategies.end())
        out.push_back(d.option);
    return out;
  }

  std::vector<std::string> names() {
    const std::lock_guard lock(mutex_);
    return names_locked();
  }

  std::vector<std::pair<std::string, std::string>> summaries() {
    const std::lock_guard lock(mutex_);
    std::vector<std::pair<std::string, std::string>> out;
    for (const StrategyRegistration& r : strategies_) out.emplace_back(r.name, r.summary);
    return out;
  }

  std::vector<DeclaredOption> options() {
    const std::lock_guard lock(mutex_);
    return options_;
  }

  std::optional<StrategyOption> option(std::string_view name) {
    const std::lock_guard lock(mutex_);
    const DeclaredOption* d = find(name);
    return d != nullptr ? std::optional<StrategyOption>(d->option) : std::nullopt;
  }

  std::uint64_t generation() {
    const std::lock_guard lock(mutex_);
    return generation_;
  }

  OptionValue load(const StrategyOptions& options, std::string_view name) {
    const std::lock_guard lock(mutex_);
    return declared(name).option.load(options);
  }

  void store(StrategyOptions& options, std::string_view name, const OptionValue& value) {
    const std::lock_guard lock(mutex_);
    declared(name).option.store(options, value);
  }

 private:
  Registry() {
    for (StrategyOption& o : builtin::common_options()) options_.push_back({std::move(o), {}});
    for (auto* registration :
         {builtin::allreduce_registration, builtin::ps_registration, builtin::local_sgd_registration,
          builtin::easgd_registration, builtin::dpsgd_registration, builtin::adpsgd_registration,
          builtin::gosgd_registration, builtin::acid_registration})
      add(registration());
  }

  DeclaredOption* find(std::string_view name) {
    for (DeclaredOption& d : options_)
      if (d.option.name() == name) return &d;
    return nullptr;
  }

  const DeclaredOption& declared(std::string_view name) {
    const DeclaredOption* d = find(name);
    FAST_ENFORCE(d != nullptr, "strategy option '{}' is not declared by any strategy", name);
    return *d;
  }

  std::vector<std::string> names_locked() const {
    std::vector<std::string> names;
    for (const StrategyRegistration& r : strategies_) names.push_back(r.name);
    return names;
  }

  // Everything register_strategy refuses, before anything is changed.
  void check(const StrategyRegistration& r) {
    FAST_ENFORCE(well_formed(r.name, '-'),
                 "register_strategy: name '{}': expected lowercase letters, digits and '-', starting with a letter",
                 r.name);
    for (const StrategyRegistration& other : strategies_)
      FAST_ENFORCE(other.name != r.name, "register_strategy: strategy '{}' is already registered", r.name);
    FAST_ENFORCE(static_cast<bool>(r.make), "register_strategy: strategy '{}' has no factory", r.name);
    for (std::size_t i = 0; i < r.options.size(); ++i) {
      const StrategyOption& o = r.options[i];
      FAST_ENFORCE(well_formed(o.name(), '_'),
                   "register_strategy: strategy '{}': option name '{}': expected lowercase letters, digits and '_', "
                   "starting with a letter",
                   r.name, o.name());
      for (std::size_t j = 0; j < i; ++j)
        FAST_ENFORCE(r.options[j].name() != o.name(), "register_strategy: strategy '{}' declares option '{}' twice",
                     r.name, o.name());
      try {
        o.validate(o.default_value());
      } catch (const core::InvalidArgument& e) {
        FAST_THROW(core::InvalidArgument, "register_strategy: strategy '{}': the default of option {}", r.name,
                   e.what());
      }
      const DeclaredOption* known = find(o.name());
      if (known == nullptr) continue;
      FAST_ENFORCE(!known->strategies.empty(),
                   "register_strategy: strategy '{}': option '{}' is a common option of every strategy; declare "
                   "another name",
                   r.name, o.name());
      FAST_ENFORCE(known->option.same_setting(o),
                   "register_strategy: strategy '{}': option '{}' ({}, default {}) differs from its declaration by "
                   "{} ({}, default {})",
                   r.name, o.name(), o.expected(), o.text(o.default_value()), known->strategies.front(),
                   known->option.expected(), known->option.text(known->option.default_value()));
    }
    check_trait(r, "asynchronous", r.asynchronous);
    check_trait(r, "sends_gradients", r.sends_gradients);
    check_trait(r, "robust_aggregate", r.robust_aggregate);
    check_trait(r, "external_optimizer", r.external_optimizer);
  }

  // A condition on an option: the option is the strategy's own or common, and each value is one
  // it accepts, written as the option writes it.
  void check_trait(const StrategyRegistration& r, std::string_view trait_name, const StrategyTrait& trait) {
    if (trait.option().empty()) return;
    const StrategyOption* option = nullptr;
    for (const StrategyOption& o : r.options)
      if (o.name() == trait.option()) option = &o;
    if (option == nullptr) {
      const DeclaredOption* common = find(trait.option());
      if (common != nullptr && common->strategies.empty()) option = &common->option;
    }
    FAST_ENFORCE(option != nullptr,
                 "register_strategy: strategy '{}': trait {} depends on option '{}', which it does not declare", r.name,
                 trait_name, trait.option());
    FAST_ENFORCE(!trait.values().empty(), "register_strategy: strategy '{}': trait {} lists no value of option '{}'",
                 r.name, trait_name, trait.option());
    for (const std::string& value : trait.values()) {
      std::string written;
      try {
        written = option->text(option->parse(value));
      } catch (const core::InvalidArgument& e) {
        FAST_THROW(core::InvalidArgument, "register_strategy: strategy '{}': trait {}: option {}", r.name, trait_name,
                   e.what());
      }
      FAST_ENFORCE(written == value,
                   "register_strategy: strategy '{}': trait {}: option '{}' writes the value '{}' as '{}'", r.name,
                   trait_name, trait.option(), value, written);
    }
  }

  std::mutex mutex_;
  std::vector<StrategyRegistration> strategies_;  // their options are in options_
  std::vector<DeclaredOption> options_;
  std::uint64_t generation_ = 0;
};

}  // namespace

void register_strategy(StrategyRegistration registration) { Registry::instance().add(std::move(registration)); }

std::vector<DeclaredOption> declared_options() { return Registry::instance().options(); }

std::optional<StrategyOption> find_option(std::string_view name) { return Registry::instance().option(name); }

std::vector<std::pair<std::string, std::string>> strategy_summaries() { return Registry::instance().summaries(); }

std::uint64_t registry_generation() { return Registry::instance().generation(); }

std::vector<std::string> strategy_names() { return Registry::instance().names(); }

StrategyRegistration find_registration(std::string_view name) { return Registry::instance().entry(name); }

StrategyTrait StrategyTrait::when(std::string option, std::vector<std::string> values) {
  StrategyTrait trait;
  trait.option_ = std::move(option);
  trait.values_ = std::move(values);
  return trait;
}

bool StrategyTrait::holds(const StrategyOptions& options) const {
  if (option_.empty()) return value_;
  const std::optional<StrategyOption> declaration = find_option(option_);
  FAST_ENFORCE(declaration.has_value(), "strategy trait: option '{}' is not declared", option_);
  const std::string value = declaration->text(declaration->load(options));
  return std::find(values_.begin(), values_.end(), value) != values_.end();
}

namespace {

// "a", "a and b", "a, b and c".
std::string phrase(const std::vector<std::string>& items, std::string_view last_joint) {
  if (items.empty()) return {};
  if (items.size() == 1) return items.front();
  const std::vector<std::string> head(items.begin(), items.end() - 1);
  return fmt::format("{} {} {}", fmt::join(head, ", "), last_joint, items.back());
}

}  // namespace

std::string StrategyTrait::condition() const {
  if (option_.empty()) return {};
  return fmt::format("with {} = {}", option_, phrase(values_, "or"));
}

std::string StrategyTrait::condition_for(const StrategyOptions& options) const {
  if (option_.empty()) return {};
  const std::optional<StrategyOption> declaration = find_option(option_);
  FAST_ENFORCE(declaration.has_value(), "strategy trait: option '{}' is not declared", option_);
  return fmt::format("with {} = {}", option_, declaration->text(declaration->load(options)));
}

std::string strategies_with(StrategyTrait StrategyRegistration::*trait,
                            const std::function<bool(const StrategyRegistration&)>& also) {
  std::vector<std::string> items;
  for (const StrategyRegistration& r : Registry::instance().registrations()) {
    const StrategyTrait& t = r.*trait;
    if (!t.can_hold() || (also && !also(r))) continue;
    const std::string condition = t.condition();
    items.push_back(condition.empty() ? r.name : fmt::format("{} {}", r.name, condition));
  }
  return items.empty() ? std::string("none") : phrase(items, "and");
}

void validate_declared_options(const StrategyOptions& options) {
  for (const StrategyOption& o : Registry::instance().options_of(options.name)) {
    try {
      o.validate(o.load(options));
    } catch (const core::InvalidArgument& e) {
      // validate()'s message starts with "NAME: "; the check of a common option may not.
      std::string_view what = e.what();
      const std::string prefix = o.name() + ": ";
      if (what.starts_with(prefix)) what.remove_prefix(prefix.size());
      FAST_THROW(core::InvalidArgument, "strategy '{}': option '{}': {}", options.name, o.name(), what);
    }
  }
}

std::vector<std::string> short_run_warnings(const StrategyOptions& options, std::int64_t total_steps) {
  std::vector<std::string> warnings;
  if (total_steps <= 0) return warnings;
  for (const StrategyOption& o : Registry::instance().options_of(options.name))
    if (o.short_run())
      if (const std::optional<std::string> missed = o.short_run()(options, total_steps))
        warnings.push_back(fmt::format("{} = {}: {}", o.name(), o.text(o.load(options)), *missed));
  return warnings;
}

namespace {

template <typename T>
T typed_value(const StrategyOptions& options, std::string_view name, std::string_view getter) {
  const OptionValue v = Registry::instance().load(options, name);
  const T* typed = std::get_if<T>(&v);
  FAST_ENFORCE(typed != nullptr, "strategy option '{}': {} does not read its type ({})", name, getter,
               option_type_name(find_option(name)->type()));
  return *typed;
}

}  // namespace

std::int64_t StrategyOptions::get_integer(std::string_view key) const {
  return typed_value<std::int64_t>(*this, key, "get_integer");
}

double StrategyOptions::get_number(std::string_view key) const { return typed_value<double>(*this, key, "get_number"); }

std::string StrategyOptions::get_string(std::string_view key) const {
  return typed_value<std::string>(*this, key, "get_string");
}

bool StrategyOptions::get_bool(std::string_view key) const { return typed_value<bool>(*this, key, "get_bool"); }

void StrategyOptions::set(std::string_view key, const OptionValue& value) {
  Registry::instance().store(*this, key, value);
}

namespace {

// The registry entry of options.name, after the checks every strategy shares: its declared
// options in range, dgc, the common options against the world size; InvalidArgument listing the
// names for an unknown one.
StrategyRegistration checked_entry(const StrategyOptions& options, int workers) {
  StrategyRegistration entry = Registry::instance().entry(options.name);
  validate_declared_options(options);
  validate_dgc(options);
  builtin::check_common(options, workers);
  return entry;
}

}  // namespace

void check_strategy_options(const StrategyOptions& options, int workers) {
  const StrategyRegistration entry = checked_entry(options, workers);
  if (entry.check) entry.check(options, workers);
}

std::unique_ptr<Strategy> make_strategy(const StrategyOptions& options, collective::Communicator& comm) {
  return checked_entry(options, comm.size()).make(options, comm);
}

}  // namespace fast::strategy
