#pragma once
// Private to fast_settings: what the table of general settings (config_keys.cpp) is written with,
// and the table itself for config.cpp. Not part of config.hpp's contract; the unit tests of the
// settings include it to check the table's own checks.
//
// Every builder returns a ConfigKey whose `accepts` (docs/config.md's "accepts" column) is given
// in the same declaration as its name: an integer or number key's comes from its core::Setting
// declaration, a string, path or boolean key's is the `accepts` argument of text_key.
// Thread-safety: plain functions of their arguments; the returned keys are values.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "fast/core/parse.hpp"

namespace fast::settings::detail {

// "true" | "false" (a flag given without a value is "true"); InvalidArgument naming `key` otherwise.
bool parse_bool(const std::string& text, std::string_view key);
// "1,1,1.5,4" -> {1, 1, 1.5, 4}; each a number >= 1. Empty text: no factors. InvalidArgument
// naming `key`, the item and its position for a bad one.
std::vector<double> parse_factors(const std::string& text, std::string_view key);
// `value` when it is one of `allowed`; InvalidArgument naming `key` and listing `allowed` otherwise.
std::string one_of(const std::string& value, const std::vector<std::string>& allowed, std::string_view key);
// "one of: a, b" ("; or empty" appended when `empty_too`): the `accepts` of such a key.
std::string one_of_text(const std::vector<std::string>& allowed, bool empty_too = false);
// A value as --help and the docs show it ("0.05", "12").
std::string text(double v);
std::string text(long long v);

// The key type of a declaration's type (a choice is a string key).
KeyType key_type(core::SettingType type);

// A general integer or number setting, declared as the strategies declare their options
// (fast/strategy/option.hpp): the declaration's range is the setting's only check, and its
// `accepts`, its error messages ("NAME: expected a number in [0, 1), got 1.50") and the test
// generated from the declarations all come from it. `set` receives a value in range.
ConfigKey declared_key(const core::Setting& declaration,
                       std::function<void(training::TrainOptions&, const core::SettingValue&)> set,
                       std::function<std::string(const training::TrainOptions&)> get);

// A general string, path or boolean setting: `accepts` is what docs/config.md's "accepts" column
// says of its values ("a folder; or empty"), `help` its description; `set` checks the text itself
// and throws InvalidArgument naming the key for a bad one.
ConfigKey text_key(std::string name, KeyType type, std::string accepts, std::string help,
                   std::function<void(training::TrainOptions&, const std::string&)> set,
                   std::function<std::string(const training::TrainOptions&)> get);

// `key` with its ConfigKey::inert: `why_not` returns the other setting that turns it off
// ("dgc = false"), or nullopt when it has an effect.
ConfigKey applies_when(ConfigKey key, std::function<std::optional<std::string>(const training::TrainOptions&)> why_not);

// `key` with ConfigKey::compare_sets; `key` with ConfigKey::compare_refuses = `why`.
ConfigKey set_by_compare(ConfigKey key);
ConfigKey refused_by_compare(ConfigKey key, std::string why);
// `key` with ConfigKey::per_process.
ConfigKey per_process(ConfigKey key);

// An integer setting stored in a field of type T: at least `minimum`, and at most T's largest value
// (a larger one would wrap: 2^32 + 3 workers are not 3).
template <typename T>
core::Setting integer_declaration(std::string name, std::string help, long long minimum,
                                  long long maximum = core::max_of<std::int64_t>()) {
  core::Setting d = core::Setting::integer(std::move(name), 0, std::move(help));
  d.at_least(static_cast<double>(minimum));
  const long long most = std::min<long long>(maximum, static_cast<long long>(core::max_of<T>()));
  if (most < core::max_of<std::int64_t>()) d.at_most(static_cast<double>(most));
  return d;
}

// The value of an integer declaration as T (in range: the declaration checked it).
template <typename T>
T integer_of(const core::SettingValue& v) {
  return static_cast<T>(std::get<std::int64_t>(v));
}

inline double number_of(const core::SettingValue& v) { return std::get<double>(v); }

// InvalidUsage naming the first key whose `accepts` is empty: every general key says what it accepts.
void require_accepts(const std::vector<ConfigKey>& keys);

// The key declarations of the tables below are written with these (they name training::TrainOptions
// as TrainOptions).
// The range of a number setting: "RANGE" is a chain of the declaration's range calls.
#define FAST_NUMBER_DECLARATION(NAME, DESC, RANGE) core::Setting::number(NAME, 0, DESC) RANGE

// An integer key in TrainOptions::FIELD, at least MIN and at most MAX (and what FIELD's type holds).
#define FAST_INT_KEY_UP_TO(NAME, DESC, FIELD, MIN, MAX)                                                 \
  declared_key(                                                                                         \
      integer_declaration<decltype(TrainOptions{}.FIELD)>(NAME, DESC, MIN, MAX),                        \
      [](TrainOptions& o, const core::SettingValue& v) { o.FIELD = integer_of<decltype(o.FIELD)>(v); }, \
      [](const TrainOptions& o) { return text(static_cast<long long>(o.FIELD)); })

// An integer key bounded above only by what FIELD's type holds.
#define FAST_INT_KEY(NAME, DESC, FIELD, MIN) FAST_INT_KEY_UP_TO(NAME, DESC, FIELD, MIN, core::max_of<std::int64_t>())

// A number key in FIELD, in RANGE.
#define FAST_NUMBER_KEY(NAME, DESC, FIELD, RANGE)                                   \
  declared_key(                                                                     \
      FAST_NUMBER_DECLARATION(NAME, DESC, RANGE),                                   \
      [](TrainOptions& o, const core::SettingValue& v) { o.FIELD = number_of(v); }, \
      [](const TrainOptions& o) { return text(o.FIELD); })

// The settings of `fast train` other than the strategies' options, in documentation order, each
// with its `accepts` (checked by require_accepts). config_keys.cpp.
std::vector<ConfigKey> general_keys();

// The groups of general_keys() about multi-process runs (zmq; docs/launch.md), in documentation
// order: how the processes find each other, whom they trust, and the network they use.
// process_keys.cpp.
std::vector<ConfigKey> process_keys();
std::vector<ConfigKey> trust_keys();
std::vector<ConfigKey> network_keys();

}  // namespace fast::settings::detail
