#pragma once
// Setting: the declaration of one named value a user gives as text — a strategy option
// (strategy/option.hpp: a config key and a flag) or a key of a spec string (core/spec.hpp:
// "int8:levels=15"). It holds the name, the type, the default, the allowed range or values and a
// help sentence, and turns text into a checked value. Declared once, it is the only check of the
// value, and the source of --help and docs/config.md's "accepts" column (expected()).
//
// Values travel as SettingValue: integer settings hold std::int64_t, number settings double,
// string and choice settings std::string, boolean settings bool.
//
// Errors: parse() and validate() throw InvalidArgument whose message starts with "NAME: " and says
// what was expected and what was got ("period: expected an integer >= 1, got 0"); callers replace
// or extend that prefix with where the value came from (a file and line, a flag, a spec).
//
// Thread-safety: a declaration is a value; its const members may be called from any thread.

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace fast::core {

enum class SettingType : std::uint8_t {
  integer,  // std::int64_t; a TOML integer; text through core::parse_int64
  number,   // double, finite; a TOML integer or float
  string,   // std::string, free text (or checked by check())
  boolean,  // bool; "true" or "false"
  choice,   // std::string, one of allowed()
};
using SettingValue = std::variant<std::int64_t, double, std::string, bool>;

// "integer", "number", "string", "boolean", "choice".
std::string_view setting_type_name(SettingType type);

// Text to a value; InvalidArgument "WHAT: expected an integer, got 'TEXT'" (integers through
// core::parse_int64; a number must be finite; a boolean is "true" or "false").
std::int64_t parse_integer_text(const std::string& text, std::string_view what);
double parse_number_text(const std::string& text, std::string_view what);
bool parse_bool_text(const std::string& text, std::string_view what);

class Setting {
 public:
  // A further check of a value of the right type and in range; throws InvalidArgument starting
  // with "NAME: " for a bad one.
  using Check = std::function<void(const SettingValue&)>;

  // name: the key as the user writes it. help: a sentence for --help and the docs.
  static Setting integer(std::string name, std::int64_t default_value, std::string help);
  static Setting number(std::string name, double default_value, std::string help);
  static Setting string(std::string name, std::string default_value, std::string help);
  static Setting boolean(std::string name, bool default_value, std::string help);
  static Setting choice(std::string name, std::vector<std::string> allowed, std::string default_value,
                        std::string help);

  // The range of an integer or number setting: at_least and at_most are inclusive bounds,
  // greater_than and less_than exclusive ones; or_exactly accepts one value outside the range too
  // (a sentinel: acid_eta's -1, "from the graph").
  Setting& at_least(double minimum);
  Setting& greater_than(double minimum);
  Setting& at_most(double maximum);
  Setting& less_than(double maximum);
  Setting& or_exactly(double value);
  // Makes a string setting a choice among `allowed`.
  Setting& one_of(std::vector<std::string> allowed);
  Setting& check(Check fn);
  // What expected() says instead of "a string", for a string setting with a check() of its form
  // ("dimensions of 1 to 1000000 joined by 'x'").
  Setting& accepts(std::string text);
  // What docs show as the default when the value in use is computed ("W - F"); the declared
  // default is still what load-free readers get.
  Setting& default_shown(std::string text);

  const std::string& name() const { return name_; }
  SettingType type() const { return type_; }
  const std::string& help() const { return help_; }
  const SettingValue& default_value() const { return default_; }
  const std::vector<std::string>& allowed() const { return allowed_; }
  // The default as docs show it: default_shown() if set, else text(default_value()).
  std::string default_text() const;
  // "an integer >= 1", "a number in (0, 1)", "a number >= 0, or -1", "one of: sync, async, ssp",
  // "a string": what a value must be, as error messages and docs say it.
  std::string expected() const;
  // The bounds of an integer or number setting (infinite: none) and whether each is exclusive.
  double minimum() const { return min_; }
  double maximum() const { return max_; }
  bool minimum_excluded() const { return min_open_; }
  bool maximum_excluded() const { return max_open_; }
  // The one value accepted outside the range (or_exactly), if any.
  const std::optional<double>& sentinel() const { return exactly_; }
  // Whether `other` declares the same setting: type, default, range (with its sentinel) and allowed
  // values equal.
  bool same_setting(const Setting& other) const;

  // Text to a valid value; InvalidArgument "NAME: expected ..., got ...".
  SettingValue parse(const std::string& text) const;
  // Checks a value's type, range, allowed values and check(); InvalidArgument as parse().
  void validate(const SettingValue& value) const;
  // The value as text that parse() reads back to the same value (numbers: shortest round trip).
  std::string text(const SettingValue& value) const;

 protected:
  Setting(std::string name, SettingType type, SettingValue default_value, std::string help);

 private:
  // validate(), with `given` as the value its messages echo (parse(): the text as given).
  void validate(const SettingValue& value, std::string_view given) const;
  std::string name_;
  SettingType type_;
  SettingValue default_;
  std::string help_;
  double min_ = -std::numeric_limits<double>::infinity();  // range of integer and number settings
  double max_ = std::numeric_limits<double>::infinity();
  bool min_open_ = false;             // greater_than: the minimum is excluded
  bool max_open_ = false;             // less_than: the maximum is excluded
  std::optional<double> exactly_;     // or_exactly: accepted outside the range
  std::vector<std::string> allowed_;  // choice settings
  std::string accepts_;               // accepts(): replaces "a string" in expected()
  std::string default_shown_;         // default_shown()
  Check check_;
};

}  // namespace fast::core
