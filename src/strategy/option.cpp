#include "fast/strategy/option.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/core/parse.hpp"
#include "fast/strategy/strategy.hpp"

namespace fast::strategy {

std::string_view option_type_name(OptionType type) {
  switch (type) {
    case OptionType::integer: return "integer";
    case OptionType::number: return "number";
    case OptionType::string: return "string";
    case OptionType::boolean: return "boolean";
    case OptionType::choice: return "choice";
  }
  return "?";
}

std::int64_t parse_integer_text(const std::string& text, std::string_view what) {
  return core::parse_int64(text, what);
}

// Every number setting is finite: "inf" and "nan" read as doubles, but no setting means them (an
// infinite slowdown or time limit would hang or overflow the clock).
double parse_number_text(const std::string& text, std::string_view what) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  FAST_ENFORCE(!text.empty() && end == text.c_str() + text.size(), "{}: expected a number, got '{}'", what, text);
  FAST_ENFORCE(std::isfinite(value), "{}: expected a finite number, got '{}'", what, text);
  return value;
}

bool parse_bool_text(const std::string& text, std::string_view what) {
  FAST_ENFORCE(text == "true" || text == "false", "{}: expected true or false, got '{}'", what, text);
  return text == "true";
}

StrategyOption::StrategyOption(std::string name, OptionType type, OptionValue default_value, std::string help)
    : name_(std::move(name)), type_(type), default_(std::move(default_value)), help_(std::move(help)) {}

StrategyOption StrategyOption::integer(std::string name, std::int64_t default_value, std::string help) {
  return {std::move(name), OptionType::integer, default_value, std::move(help)};
}

StrategyOption StrategyOption::number(std::string name, double default_value, std::string help) {
  return {std::move(name), OptionType::number, default_value, std::move(help)};
}

StrategyOption StrategyOption::string(std::string name, std::string default_value, std::string help) {
  return {std::move(name), OptionType::string, std::move(default_value), std::move(help)};
}

StrategyOption StrategyOption::boolean(std::string name, bool default_value, std::string help) {
  return {std::move(name), OptionType::boolean, default_value, std::move(help)};
}

StrategyOption StrategyOption::choice(std::string name, std::vector<std::string> allowed, std::string default_value,
                                      std::string help) {
  StrategyOption o(std::move(name), OptionType::choice, std::move(default_value), std::move(help));
  o.allowed_ = std::move(allowed);
  return o;
}

StrategyOption StrategyOption::bound(std::string name, OptionType type, std::string help, Store store, Load load) {
  const OptionValue default_value = load(StrategyOptions{});
  StrategyOption o(std::move(name), type, default_value, std::move(help));
  o.store_ = std::move(store);
  o.load_ = std::move(load);
  return o;
}

StrategyOption& StrategyOption::at_least(double minimum) {
  min_ = minimum;
  min_open_ = false;
  return *this;
}

StrategyOption& StrategyOption::greater_than(double minimum) {
  min_ = minimum;
  min_open_ = true;
  return *this;
}

StrategyOption& StrategyOption::at_most(double maximum) {
  max_ = maximum;
  max_open_ = false;
  return *this;
}

StrategyOption& StrategyOption::less_than(double maximum) {
  max_ = maximum;
  max_open_ = true;
  return *this;
}

StrategyOption& StrategyOption::or_exactly(double value) {
  exactly_ = value;
  return *this;
}

StrategyOption& StrategyOption::check(Check fn) {
  check_ = std::move(fn);
  return *this;
}

StrategyOption& StrategyOption::one_of(std::vector<std::string> allowed) {
  FAST_ENFORCE(type_ == OptionType::string || type_ == OptionType::choice,
               "option '{}': one_of applies to string options, not to {} ones", name_, option_type_name(type_));
  type_ = OptionType::choice;
  allowed_ = std::move(allowed);
  return *this;
}

std::string StrategyOption::expected() const {
  const bool is_integer = type_ == OptionType::integer;
  const std::string_view what = is_integer ? "an integer" : "a number";
  const bool has_min = std::isfinite(min_), has_max = std::isfinite(max_);
  std::string range;
  switch (type_) {
    case OptionType::integer:
    case OptionType::number:
      if (has_min && has_max)
        range = fmt::format("{} in {}{}, {}{}", what, min_open_ ? '(' : '[', min_, max_, max_open_ ? ')' : ']');
      else if (has_min && min_open_ && min_ == 0)
        range = is_integer ? "a positive integer" : "a positive number";
      else if (has_min)
        range = fmt::format("{} {} {}", what, min_open_ ? ">" : ">=", min_);
      else if (has_max)
        range = fmt::format("{} {} {}", what, max_open_ ? "<" : "<=", max_);
      else
        range = std::string(what);
      return exactly_ ? fmt::format("{}, or {}", range, *exactly_) : range;
    case OptionType::string: return "a string";
    case OptionType::boolean: return "true or false";
    case OptionType::choice: return fmt::format("one of: {}", fmt::join(allowed_, ", "));
  }
  return "?";
}

bool StrategyOption::same_setting(const StrategyOption& other) const {
  return type_ == other.type_ && default_ == other.default_ && min_ == other.min_ && max_ == other.max_ &&
         min_open_ == other.min_open_ && max_open_ == other.max_open_ && exactly_ == other.exactly_ &&
         allowed_ == other.allowed_;
}

OptionValue StrategyOption::parse(const std::string& text) const {
  OptionValue value;
  switch (type_) {
    case OptionType::integer: value = parse_integer_text(text, name_); break;
    case OptionType::number: value = parse_number_text(text, name_); break;
    case OptionType::boolean: value = parse_bool_text(text, name_); break;
    case OptionType::string:
    case OptionType::choice: value = text; break;
  }
  validate(value, text);
  return value;
}

void StrategyOption::validate(const OptionValue& value) const { validate(value, text(value)); }

void StrategyOption::validate(const OptionValue& value, std::string_view given) const {
  const std::size_t index = type_ == OptionType::integer   ? 0
                            : type_ == OptionType::number  ? 1
                            : type_ == OptionType::boolean ? 3
                                                           : 2;
  FAST_ENFORCE(value.index() == index, "{}: expected {}, got a value of another type", name_, expected());
  if (type_ == OptionType::integer || type_ == OptionType::number) {
    const double v =
        type_ == OptionType::integer ? static_cast<double>(std::get<std::int64_t>(value)) : std::get<double>(value);
    const bool above = min_open_ ? v > min_ : v >= min_;
    const bool below = max_open_ ? v < max_ : v <= max_;
    FAST_ENFORCE((std::isfinite(v) && above && below) || (exactly_ && v == *exactly_), "{}: expected {}, got {}", name_,
                 expected(), given);
  }
  if (type_ == OptionType::choice) {
    const std::string& v = std::get<std::string>(value);
    FAST_ENFORCE(std::find(allowed_.begin(), allowed_.end(), v) != allowed_.end(),
                 "{}: unknown value '{}'; expected one of: {}", name_, v, fmt::join(allowed_, ", "));
  }
  if (check_) check_(value);
}

std::string StrategyOption::text(const OptionValue& value) const {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else {
          return fmt::format("{}", v);
        }
      },
      value);
}

void StrategyOption::store(StrategyOptions& options, const OptionValue& value) const {
  validate(value);
  if (store_) {
    store_(options, value);
  } else {
    options.values.insert_or_assign(name_, value);
  }
}

OptionValue StrategyOption::load(const StrategyOptions& options) const {
  if (load_) return load_(options);
  const auto it = options.values.find(name_);
  return it != options.values.end() ? it->second : default_;
}

}  // namespace fast::strategy
