#include "key_builders.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/core/suggest.hpp"

namespace fast::settings::detail {

using training::TrainOptions;

// Text parsing is core's (fast/core/setting.hpp), as the strategy options', so that every setting
// reads and refuses values alike; integers go through core::parse_int, to the setting's own type
// (a larger value would wrap: 2^32 + 3 workers are not 3). Every check echoes the value as given.
bool parse_bool(const std::string& text, std::string_view key) { return core::parse_bool_text(text, key); }

std::vector<double> parse_factors(const std::string& text, std::string_view key) {
  std::vector<double> factors;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string item(rest.substr(0, comma));
    const double f = core::parse_number_text(item, key);
    FAST_ENFORCE(f >= 1.0, "{}: expected factors >= 1, got {} (item {})", key, item, factors.size() + 1);
    factors.push_back(f);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
    FAST_ENFORCE(!rest.empty(), "{}: expected a number after the last ',', got nothing", key);
  }
  return factors;
}

std::string one_of(const std::string& value, const std::vector<std::string>& allowed, std::string_view key) {
  for (const auto& a : allowed)
    if (a == value) return value;
  FAST_THROW(core::InvalidArgument, "{}: unknown value '{}'{}; expected one of: {}", key, value,
             core::did_you_mean(value, allowed), fmt::join(allowed, ", "));
}

std::string one_of_text(const std::vector<std::string>& allowed, bool empty_too) {
  return fmt::format("one of: {}{}", fmt::join(allowed, ", "), empty_too ? "; or empty" : "");
}

std::string text(double v) { return fmt::format("{}", v); }
std::string text(long long v) { return fmt::format("{}", v); }

KeyType key_type(core::SettingType type) {
  switch (type) {
    case core::SettingType::integer: return KeyType::integer;
    case core::SettingType::number: return KeyType::number;
    case core::SettingType::boolean: return KeyType::boolean;
    case core::SettingType::string:
    case core::SettingType::choice: return KeyType::string;
  }
  return KeyType::string;
}

ConfigKey declared_key(const core::Setting& declaration,
                       std::function<void(TrainOptions&, const core::SettingValue&)> set,
                       std::function<std::string(const TrainOptions&)> get) {
  ConfigKey key{
      declaration.name(), key_type(declaration.type()), declaration.help(),
      [declaration, set = std::move(set)](TrainOptions& o, const std::string& v) { set(o, declaration.parse(v)); },
      std::move(get)};
  key.accepts = declaration.expected();
  key.declaration = declaration;
  return key;
}

ConfigKey text_key(std::string name, KeyType type, std::string accepts, std::string help,
                   std::function<void(TrainOptions&, const std::string&)> set,
                   std::function<std::string(const TrainOptions&)> get) {
  ConfigKey key{std::move(name), type, std::move(help), std::move(set), std::move(get)};
  key.accepts = std::move(accepts);
  return key;
}

ConfigKey applies_when(ConfigKey key, std::function<std::optional<std::string>(const TrainOptions&)> why_not) {
  key.inert = std::move(why_not);
  return key;
}

ConfigKey set_by_compare(ConfigKey key) {
  key.compare_sets = true;
  return key;
}

ConfigKey refused_by_compare(ConfigKey key, std::string why) {
  key.compare_refuses = std::move(why);
  return key;
}

ConfigKey per_process(ConfigKey key) {
  key.per_process = true;
  return key;
}

void require_accepts(const std::vector<ConfigKey>& keys) {
  for (const ConfigKey& k : keys)
    FAST_ENFORCE_AS(core::InvalidUsage, !k.accepts.empty(), "setting '{}' has no 'accepts' text", k.name);
}

}  // namespace fast::settings::detail
