#pragma once
// StrategyOption: the declaration of one strategy setting — a core::Setting (its name, the config
// key; the command-line flag is --name with '_' spelled '-'; its type, default, allowed range or
// values and help text) and where its value lives in a StrategyOptions. A strategy declares the
// options it reads in its registry entry (registry.hpp); `fast train`'s config keys, flags, --help
// text, validation and docs/config.md are generated from these declarations, so a strategy's
// options are written once, beside the strategy.
//
// Values travel as OptionValue (core::SettingValue): integer options hold std::int64_t, number
// options double, string and choice options std::string, boolean options bool.
//
// Errors: parse() and validate() throw InvalidArgument whose message starts with "NAME: " and says
// what was expected and what was got ("period: expected an integer >= 1, got 0"); the config
// layer replaces that prefix with the file, line and key, or the flag.
//
// Thread-safety: a declaration is a value; once registered it is only read, and its const members
// may be called from any thread (fields are written only in the StrategyOptions passed).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fast/core/setting.hpp"

namespace fast::strategy {

struct StrategyOptions;

using OptionType = core::SettingType;
using OptionValue = core::SettingValue;
using core::parse_bool_text;
using core::parse_integer_text;
using core::parse_number_text;
inline std::string_view option_type_name(OptionType type) { return core::setting_type_name(type); }

class StrategyOption : public core::Setting {
 public:
  using Store = std::function<void(StrategyOptions&, const OptionValue&)>;
  using Load = std::function<OptionValue(const StrategyOptions&)>;
  // Why the option changes nothing under the other options ("dgc = false"), or nullopt when it has
  // an effect (applies_when).
  using Inert = std::function<std::optional<std::string>(const StrategyOptions&)>;
  // What a run of `total_steps` steps per worker (>= 1) misses with the option's value, or nullopt
  // when the run is long enough (short_run).
  using ShortRun = std::function<std::optional<std::string>(const StrategyOptions&, std::int64_t total_steps)>;

  // Declarations of options kept in StrategyOptions::values (strategies registered from outside
  // the library read them with StrategyOptions::get_*()). name: lowercase letters, digits and '_'
  // (register_strategy checks it). help: a sentence for --help and docs/config.md, without the
  // strategies' names (they are added).
  static StrategyOption integer(std::string name, std::int64_t default_value, std::string help) {
    return StrategyOption(core::Setting::integer(std::move(name), default_value, std::move(help)));
  }
  static StrategyOption number(std::string name, double default_value, std::string help) {
    return StrategyOption(core::Setting::number(std::move(name), default_value, std::move(help)));
  }
  static StrategyOption string(std::string name, std::string default_value, std::string help) {
    return StrategyOption(core::Setting::string(std::move(name), std::move(default_value), std::move(help)));
  }
  static StrategyOption boolean(std::string name, bool default_value, std::string help) {
    return StrategyOption(core::Setting::boolean(std::move(name), default_value, std::move(help)));
  }
  static StrategyOption choice(std::string name, std::vector<std::string> allowed, std::string default_value,
                               std::string help) {
    return StrategyOption(
        core::Setting::choice(std::move(name), std::move(allowed), std::move(default_value), std::move(help)));
  }
  // Declarations of options kept in a field of StrategyOptions (the built-in strategies' typed
  // view): the type follows the field's (an integer type: integer, double: number, std::string:
  // string, bool: boolean), and the default is the field's initializer, so it is written once.
  template <typename T>
  static StrategyOption field(std::string name, T StrategyOptions::*member, std::string help);
  // The same through a pair of functions (a choice stored as an enum or a bool); the default is
  // load(StrategyOptions{}).
  static StrategyOption bound(std::string name, OptionType type, std::string help, Store store, Load load);

  // core::Setting's range and form declarations (setting.hpp), returning the StrategyOption. The
  // declaration is the only range check of a strategy option: the config layer and
  // make_strategy() both validate against it.
  StrategyOption& at_least(double minimum) { return chain(&Setting::at_least, minimum); }
  StrategyOption& greater_than(double minimum) { return chain(&Setting::greater_than, minimum); }
  StrategyOption& at_most(double maximum) { return chain(&Setting::at_most, maximum); }
  StrategyOption& less_than(double maximum) { return chain(&Setting::less_than, maximum); }
  StrategyOption& or_exactly(double value) { return chain(&Setting::or_exactly, value); }
  StrategyOption& one_of(std::vector<std::string> allowed) { return chain(&Setting::one_of, std::move(allowed)); }
  StrategyOption& check(Check fn) { return chain(&Setting::check, std::move(fn)); }
  StrategyOption& accepts(std::string text) { return chain(&Setting::accepts, std::move(text)); }

  // Declares when the option has an effect: `why_not` returns the other option that turns it off,
  // as "KEY = VALUE" ("dgc = false"), or nullopt. `fast train` and fast.Worker warn about a
  // setting the user gave that changes nothing (settings::inert_settings); without a declaration
  // the option always has an effect.
  StrategyOption& applies_when(Inert why_not) {
    inert_ = std::move(why_not);
    return *this;
  }
  // The function applies_when() declared (empty: none).
  const Inert& inert() const { return inert_; }
  // Declares, for an option counted in steps of one worker, what a run too short for its value
  // misses ("the replicas are never averaged during the run"). strategy::Worker warns with it at
  // the start of a run whose length it knows (short_run_warnings, registry.hpp).
  StrategyOption& short_run(ShortRun what_is_missed) {
    short_run_ = std::move(what_is_missed);
    return *this;
  }
  // The function short_run() declared (empty: none).
  const ShortRun& short_run() const { return short_run_; }

  bool has_field() const { return static_cast<bool>(store_); }
  // Validates `value` and writes it into `options` (its field, or options.values).
  void store(StrategyOptions& options, const OptionValue& value) const;
  // The option's value in `options`: its field; else the value set in options.values, else the
  // default.
  OptionValue load(const StrategyOptions& options) const;

 private:
  explicit StrategyOption(core::Setting setting) : core::Setting(std::move(setting)) {}
  StrategyOption(std::string name, OptionType type, OptionValue default_value, std::string help)
      : core::Setting(std::move(name), type, std::move(default_value), std::move(help)) {}

  template <typename Fn, typename Arg>
  StrategyOption& chain(Fn fn, Arg&& arg) {
    (static_cast<core::Setting&>(*this).*fn)(std::forward<Arg>(arg));
    return *this;
  }

  template <typename T>
  static T from_value(const OptionValue& v) {
    if constexpr (std::is_same_v<T, bool>) {
      return std::get<bool>(v);
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(std::get<std::int64_t>(v));
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(std::get<double>(v));
    } else {
      return std::get<std::string>(v);
    }
  }
  template <typename T>
  static OptionValue to_value(const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      return v;
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<std::int64_t>(v);
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<double>(v);
    } else {
      return std::string(v);
    }
  }

  Store store_;
  Load load_;
  Inert inert_;
  ShortRun short_run_;
};

template <typename T>
StrategyOption StrategyOption::field(std::string name, T StrategyOptions::*member, std::string help) {
  const OptionType type = std::is_same_v<T, bool>       ? OptionType::boolean
                          : std::is_integral_v<T>       ? OptionType::integer
                          : std::is_floating_point_v<T> ? OptionType::number
                                                        : OptionType::string;
  return bound(
      std::move(name), type, std::move(help),
      [member](StrategyOptions& o, const OptionValue& v) { o.*member = from_value<T>(v); },
      [member](const StrategyOptions& o) { return to_value(o.*member); });
}

}  // namespace fast::strategy
