#include "fast/core/setting.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/core/parse.hpp"
#include "fast/core/suggest.hpp"

namespace fast::core {

std::string_view setting_type_name(SettingType type) {
  switch (type) {
    case SettingType::integer: return "integer";
    case SettingType::number: return "number";
    case SettingType::string: return "string";
    case SettingType::boolean: return "boolean";
    case SettingType::choice: return "choice";
  }
  return "?";
}

std::int64_t parse_integer_text(const std::string& text, std::string_view what) { return parse_int64(text, what); }

// Every number setting is finite: "inf" and "nan" read as doubles, but no setting means them (an
// infinite slowdown or time limit would hang or overflow the clock). Decimal only, as TOML writes
// floats: no hexadecimal ("0x10"), no leading '+' or blank.
double parse_number_text(const std::string& text, std::string_view what) {
  double value = 0;
  const char* last = text.data() + text.size();
  const auto [end, error] = std::from_chars(text.data(), last, value, std::chars_format::general);
  FAST_ENFORCE(!text.empty() && end == last && error != std::errc::invalid_argument, "{}: expected a number, got '{}'",
               what, text);
  FAST_ENFORCE(error != std::errc::result_out_of_range, "{}: expected a number, got '{}', beyond a double's range",
               what, text);
  FAST_ENFORCE(std::isfinite(value), "{}: expected a finite number, got '{}'", what, text);
  return value;
}

bool parse_bool_text(const std::string& text, std::string_view what) {
  FAST_ENFORCE(text == "true" || text == "false", "{}: expected true or false, got '{}'", what, text);
  return text == "true";
}

Setting::Setting(std::string name, SettingType type, SettingValue default_value, std::string help)
    : name_(std::move(name)), type_(type), default_(std::move(default_value)), help_(std::move(help)) {}

Setting Setting::integer(std::string name, std::int64_t default_value, std::string help) {
  return {std::move(name), SettingType::integer, default_value, std::move(help)};
}

Setting Setting::number(std::string name, double default_value, std::string help) {
  return {std::move(name), SettingType::number, default_value, std::move(help)};
}

Setting Setting::string(std::string name, std::string default_value, std::string help) {
  return {std::move(name), SettingType::string, std::move(default_value), std::move(help)};
}

Setting Setting::boolean(std::string name, bool default_value, std::string help) {
  return {std::move(name), SettingType::boolean, default_value, std::move(help)};
}

Setting Setting::choice(std::string name, std::vector<std::string> allowed, std::string default_value,
                        std::string help) {
  Setting s(std::move(name), SettingType::choice, std::move(default_value), std::move(help));
  s.allowed_ = std::move(allowed);
  return s;
}

Setting& Setting::at_least(double minimum) {
  min_ = minimum;
  min_open_ = false;
  return *this;
}

Setting& Setting::greater_than(double minimum) {
  min_ = minimum;
  min_open_ = true;
  return *this;
}

Setting& Setting::at_most(double maximum) {
  max_ = maximum;
  max_open_ = false;
  return *this;
}

Setting& Setting::less_than(double maximum) {
  max_ = maximum;
  max_open_ = true;
  return *this;
}

Setting& Setting::or_exactly(double value) {
  exactly_ = value;
  return *this;
}

Setting& Setting::check(Check fn) {
  check_ = std::move(fn);
  return *this;
}

Setting& Setting::accepts(std::string text) {
  accepts_ = std::move(text);
  return *this;
}

Setting& Setting::default_shown(std::string text) {
  default_shown_ = std::move(text);
  return *this;
}

Setting& Setting::one_of(std::vector<std::string> allowed) {
  FAST_ENFORCE(type_ == SettingType::string || type_ == SettingType::choice,
               "option '{}': one_of applies to string options, not to {} ones", name_, setting_type_name(type_));
  type_ = SettingType::choice;
  allowed_ = std::move(allowed);
  return *this;
}

std::string Setting::default_text() const { return default_shown_.empty() ? text(default_) : default_shown_; }

std::string Setting::expected() const {
  const bool is_integer = type_ == SettingType::integer;
  const std::string_view what = is_integer ? "an integer" : "a number";
  // A number's largest float32 as its maximum reads as a condition, not as 3.4028234663852886e+38.
  const bool float32_max = !is_integer && max_ == static_cast<double>(std::numeric_limits<float>::max()) && !max_open_;
  const bool has_min = std::isfinite(min_), has_max = std::isfinite(max_) && !float32_max;
  std::string range;
  switch (type_) {
    case SettingType::integer:
    case SettingType::number:
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
      if (float32_max) range += ", finite as a 32-bit float";
      return exactly_ ? fmt::format("{}, or {}", range, *exactly_) : range;
    case SettingType::string: return accepts_.empty() ? "a string" : accepts_;
    case SettingType::boolean: return "true or false";
    case SettingType::choice: return fmt::format("one of: {}", fmt::join(allowed_, ", "));
  }
  return "?";
}

bool Setting::same_setting(const Setting& other) const {
  return type_ == other.type_ && default_ == other.default_ && min_ == other.min_ && max_ == other.max_ &&
         min_open_ == other.min_open_ && max_open_ == other.max_open_ && exactly_ == other.exactly_ &&
         allowed_ == other.allowed_;
}

SettingValue Setting::parse(const std::string& text) const {
  SettingValue value;
  switch (type_) {
    case SettingType::integer: value = parse_integer_text(text, name_); break;
    case SettingType::number: value = parse_number_text(text, name_); break;
    case SettingType::boolean: value = parse_bool_text(text, name_); break;
    case SettingType::string:
    case SettingType::choice: value = text; break;
  }
  validate(value, text);
  return value;
}

void Setting::validate(const SettingValue& value) const { validate(value, text(value)); }

void Setting::validate(const SettingValue& value, std::string_view given) const {
  const std::size_t index = type_ == SettingType::integer   ? 0
                            : type_ == SettingType::number  ? 1
                            : type_ == SettingType::boolean ? 3
                                                            : 2;
  FAST_ENFORCE(value.index() == index, "{}: expected {}, got a value of another type", name_, expected());
  if (type_ == SettingType::integer || type_ == SettingType::number) {
    const double v =
        type_ == SettingType::integer ? static_cast<double>(std::get<std::int64_t>(value)) : std::get<double>(value);
    const auto in_range = [&](double x) {
      return std::isfinite(x) && (min_open_ ? x > min_ : x >= min_) && (max_open_ ? x < max_ : x <= max_);
    };
    FAST_ENFORCE(in_range(v) || (exactly_ && v == *exactly_), "{}: expected {}, got {}", name_, expected(), given);
    // A setting used as a 32-bit float (its maximum is float32's) is checked as it will be used:
    // 1e-50 is 0 there, below a positive minimum.
    if (type_ == SettingType::number && max_ == static_cast<double>(std::numeric_limits<float>::max())) {
      const double rounded = static_cast<double>(static_cast<float>(v));
      FAST_ENFORCE(in_range(rounded) || (exactly_ && rounded == *exactly_),
                   "{}: expected {}, got {} ({} as a 32-bit float)", name_, expected(), given, rounded);
    }
  }
  if (type_ == SettingType::choice) {
    const std::string& v = std::get<std::string>(value);
    FAST_ENFORCE(std::find(allowed_.begin(), allowed_.end(), v) != allowed_.end(),
                 "{}: unknown value '{}'{}; expected one of: {}", name_, v, did_you_mean(v, allowed_),
                 fmt::join(allowed_, ", "));
  }
  if (check_) check_(value);
}

std::string Setting::text(const SettingValue& value) const {
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

}  // namespace fast::core
