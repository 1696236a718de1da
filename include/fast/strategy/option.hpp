#pragma once
// StrategyOption: the declaration of one strategy setting — its name (the config key; the
// command-line flag is --name with '_' spelled '-'), its type, default, allowed range or values,
// help text, and where its value lives in a StrategyOptions. A strategy declares the options it
// reads in its registry entry (registry.hpp); `fast train`'s config keys, flags, --help text,
// validation and docs/config.md are generated from these declarations, so a strategy's options
// are written once, beside the strategy.
//
// Values travel as OptionValue: integer options hold std::int64_t, number options double,
// string and choice options std::string, boolean options bool.
//
// Errors: parse() and validate() throw InvalidArgument whose message starts with "NAME: " and says
// what was expected and what was got ("period: expected an integer >= 1, got 0"); the config
// layer replaces that prefix with the file, line and key, or the flag.
//
// Thread-safety: a declaration is a value; once registered it is only read, and its const members
// may be called from any thread (fields are written only in the StrategyOptions passed).

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace fast::strategy {

struct StrategyOptions;

enum class OptionType : std::uint8_t {
  integer,  // std::int64_t; a TOML integer
  number,   // double, finite; a TOML integer or float
  string,   // std::string, free text (or checked by check())
  boolean,  // bool; a flag without a value on the command line
  choice,   // std::string, one of allowed()
};
using OptionValue = std::variant<std::int64_t, double, std::string, bool>;

// "integer", "number", "string", "boolean", "choice".
std::string_view option_type_name(OptionType type);

// Text to a value, as flags and the config layer read it; InvalidArgument "WHAT: expected an
// integer, got 'TEXT'" (a number must be finite; a boolean is "true" or "false").
std::int64_t parse_integer_text(const std::string& text, std::string_view what);
double parse_number_text(const std::string& text, std::string_view what);
bool parse_bool_text(const std::string& text, std::string_view what);

class StrategyOption {
 public:
  using Store = std::function<void(StrategyOptions&, const OptionValue&)>;
  using Load = std::function<OptionValue(const StrategyOptions&)>;
  // A further check of a value of the right type and in range; throws InvalidArgument starting
  // with "NAME: " for a bad one.
  using Check = std::function<void(const OptionValue&)>;

  // Declarations of options kept in StrategyOptions::values (strategies registered from outside
  // the library read them with StrategyOptions::get_*()). name: lowercase letters, digits and '_'
  // (register_strategy checks it). help: a sentence for --help and docs/config.md, without the
  // strategies' names (they are added).
  static StrategyOption integer(std::string name, std::int64_t default_value, std::string help);
  static StrategyOption number(std::string name, double default_value, std::string help);
  static StrategyOption string(std::string name, std::string default_value, std::string help);
  static StrategyOption boolean(std::string name, bool default_value, std::string help);
  static StrategyOption choice(std::string name, std::vector<std::string> allowed, std::string default_value,
                               std::string help);
  // Declarations of options kept in a field of StrategyOptions (the built-in strategies' typed
  // view): the type follows the field's (an integer type: integer, double: number, std::string:
  // string, bool: boolean), and the default is the field's initializer, so it is written once.
  template <typename T>
  static StrategyOption field(std::string name, T StrategyOptions::*member, std::string help);
  // The same through a pair of functions (a choice stored as an enum or a bool); the default is
  // load(StrategyOptions{}).
  static StrategyOption bound(std::string name, OptionType type, std::string help, Store store, Load load);

  // The range of an integer or number option: at_least and at_most are inclusive bounds,
  // greater_than and less_than exclusive ones; or_exactly accepts one value outside the range too
  // (a sentinel: acid_eta's -1, "from the graph"). The declaration is the only range check of a
  // strategy option: the config layer and make_strategy() both validate against it.
  StrategyOption& at_least(double minimum);
  StrategyOption& greater_than(double minimum);
  StrategyOption& at_most(double maximum);
  StrategyOption& less_than(double maximum);
  StrategyOption& or_exactly(double value);
  // Makes a string option a choice among `allowed`.
  StrategyOption& one_of(std::vector<std::string> allowed);
  StrategyOption& check(Check fn);

  const std::string& name() const { return name_; }
  OptionType type() const { return type_; }
  const std::string& help() const { return help_; }
  const OptionValue& default_value() const { return default_; }
  const std::vector<std::string>& allowed() const { return allowed_; }
  bool has_field() const { return static_cast<bool>(store_); }
  // "an integer >= 1", "a number in (0, 1)", "a number >= 0, or -1", "one of: sync, async, ssp",
  // "a string": what a value must be, as error messages and docs say it.
  std::string expected() const;
  // Whether `other` declares the same setting: type, default, range (with its sentinel) and allowed
  // values equal.
  bool same_setting(const StrategyOption& other) const;

  // Text (a flag's or a config value's) to a valid value; InvalidArgument "NAME: expected ..., got ...".
  OptionValue parse(const std::string& text) const;
  // Checks a value's type, range, allowed values and check(); InvalidArgument as parse().
  void validate(const OptionValue& value) const;
  // The value as text that parse() reads back to the same value (numbers: shortest round trip).
  std::string text(const OptionValue& value) const;
  // Validates `value` and writes it into `options` (its field, or options.values).
  void store(StrategyOptions& options, const OptionValue& value) const;
  // The option's value in `options`: its field; else the value set in options.values, else the
  // default.
  OptionValue load(const StrategyOptions& options) const;

 private:
  StrategyOption(std::string name, OptionType type, OptionValue default_value, std::string help);
  // validate(), with `given` as the value its messages echo (parse(): the text as given).
  void validate(const OptionValue& value, std::string_view given) const;

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

  std::string name_;
  OptionType type_;
  OptionValue default_;
  std::string help_;
  double min_ = -std::numeric_limits<double>::infinity();  // range of integer and number options
  double max_ = std::numeric_limits<double>::infinity();
  bool min_open_ = false;             // greater_than: the minimum is excluded
  bool max_open_ = false;             // less_than: the maximum is excluded
  std::optional<double> exactly_;     // or_exactly: accepted outside the range
  std::vector<std::string> allowed_;  // choice options
  Check check_;
  Store store_;
  Load load_;
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
