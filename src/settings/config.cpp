#include "config.hpp"

#include <algorithm>
#include <deque>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>
#include <nlohmann/json.hpp>

#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/core/file_status.hpp"
#include "fast/core/suggest.hpp"
#include "fast/runtime/environment.hpp"
#include "fast/runtime/registry.hpp"
#include "fast/strategy/registry.hpp"
#include "fast/training/environment.hpp"
#include "key_builders.hpp"

namespace fast::settings {

namespace {

using training::TrainOptions;

// The strategy options as fast train hands them to the strategy, as far as they are known before
// the data is read: dgc_warmup_steps is above 0 exactly when dgc_warmup_epochs is (the trainer
// derives the count from the epoch's length, at least 1). For the options' inert() checks.
strategy::StrategyOptions derived_strategy_options(const TrainOptions& o) {
  strategy::StrategyOptions s = o.worker.strategy;
  if (o.dgc_warmup_epochs > 0 && s.dgc_warmup_steps == 0) s.dgc_warmup_steps = 1;
  return s;
}

// The key of a declared strategy option: its description names the strategies that read it
// (none: every strategy); its value is parsed, checked and stored by the declaration.
ConfigKey strategy_key(const strategy::DeclaredOption& d) {
  const strategy::StrategyOption& option = d.option;
  std::string description = option.help();
  if (!d.strategies.empty()) description = fmt::format("{}: {}", fmt::join(d.strategies, ", "), description);
  ConfigKey key{option.name(), detail::key_type(option.type()), std::move(description),
                [option](TrainOptions& o, const std::string& v) { option.store(o.worker.strategy, option.parse(v)); },
                [option](const TrainOptions& o) { return option.text(option.load(o.worker.strategy)); }};
  key.strategy_option = true;
  key.accepts = option.expected();
  if (option.type() == strategy::OptionType::integer || option.type() == strategy::OptionType::number)
    key.declaration = option;
  if (const strategy::StrategyOption::Inert& why_not = option.inert())
    key.inert = [why_not](const TrainOptions& o) { return why_not(derived_strategy_options(o)); };
  return key;
}

// The general keys, then every declared strategy option; InvalidArgument when a strategy declared
// an option under the name of a general key.
std::vector<ConfigKey> build_keys() {
  std::vector<ConfigKey> keys = detail::general_keys();
  const std::size_t general = keys.size();
  for (const strategy::DeclaredOption& d : strategy::declared_options()) {
    for (std::size_t i = 0; i < general; ++i)
      FAST_ENFORCE(keys[i].name != d.option.name(),
                   "strategy option '{}' (declared by {}) has the name of a fast train setting; rename the option",
                   d.option.name(), d.strategies.empty() ? std::string("the common options") : d.strategies.front());
    keys.push_back(strategy_key(d));
  }
  return keys;
}

}  // namespace

// Keys are spelled with '_' in files; '-' is accepted too (and is the flags' spelling).
const ConfigKey* find_config_key(std::string_view name) {
  std::string normal(name);
  std::replace(normal.begin(), normal.end(), '-', '_');
  for (const ConfigKey& k : config_keys())
    if (k.name == normal) return &k;
  return nullptr;
}

namespace {

const ConfigKey* find_key(std::string_view name) { return find_config_key(name); }

std::vector<std::string> key_names() {
  std::vector<std::string> names;
  for (const ConfigKey& k : config_keys()) names.emplace_back(k.name);
  return names;
}

std::string_view toml_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    default: return "a date or time";
  }
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
  // Rebuilt when a strategy was registered since; earlier lists stay alive (they are referenced).
  static std::mutex mutex;
  static std::deque<std::vector<ConfigKey>> lists;
  static std::uint64_t generation = 0;
  const std::lock_guard lock(mutex);
  const std::uint64_t now = strategy::registry_generation();
  if (lists.empty() || now != generation) {
    lists.push_back(build_keys());
    generation = now;
  }
  return lists.back();
}

std::string shared_settings(const training::TrainOptions& options) {
  nlohmann::json shared = nlohmann::json::object();
  for (const ConfigKey& key : config_keys())
    if (!key.per_process) shared[key.name] = key.get(options);
  return shared.dump();
}

std::string flag_name(std::string_view key) {
  std::string flag = "--" + std::string(key);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

std::string_view key_type_name(KeyType type) {
  switch (type) {
    case KeyType::string: return "string";
    case KeyType::integer: return "integer";
    case KeyType::number: return "number";
    case KeyType::path: return "path";
    case KeyType::boolean: return "boolean";
  }
  return "?";
}

void apply_setting(TrainOptions& options, std::string_view key, const std::string& value, std::string_view origin) {
  const ConfigKey* k = find_key(key);
  FAST_ENFORCE(k != nullptr, "{}: unknown setting '{}'{}; expected one of: {}", origin, key,
               core::did_you_mean(key, key_names()), fmt::join(key_names(), ", "));
  try {
    k->set(options, value);
  } catch (const core::InvalidArgument& e) {
    // The setters' messages start with the key; the origin (flag or file position) replaces it.
    std::string_view message = e.what();
    const std::string prefix = std::string(k->name) + ": ";
    if (message.substr(0, prefix.size()) == prefix) message.remove_prefix(prefix.size());
    FAST_THROW(core::InvalidArgument, "{}: {}", origin, message);
  }
}

toml::table parse_toml_file(const std::filesystem::path& file) {
  const std::filesystem::file_status status = core::file_status_of(file, "config file");
  FAST_ENFORCE_AS(core::IoError, std::filesystem::exists(status), "config file '{}' does not exist{}", file.string(),
                  core::relative_to_note(file));
  // A folder would read as an empty file (a run with every default).
  FAST_ENFORCE(!std::filesystem::is_directory(status), "config file '{}' is a folder; expected a TOML file",
               file.string());
  try {
    return toml::parse_file(file.string());
  } catch (const toml::parse_error& e) {
    FAST_THROW(core::InvalidArgument, "config file '{}' line {} column {}: {}", file.string(), e.source().begin.line,
               e.source().begin.column, e.description());
  }
}

std::string config_value_text(std::string_view key, const toml::node& node, const std::string& where) {
  const ConfigKey* k = find_key(key);
  FAST_ENFORCE(k != nullptr, "{}: unknown key '{}'{}; expected one of: {}", where, key,
               core::did_you_mean(key, key_names()), fmt::join(key_names(), ", "));
  std::string value;
  bool ok = false;
  switch (k->type) {
    case KeyType::string:
    case KeyType::path:
      if (auto s = node.value_exact<std::string>()) value = *s, ok = true;
      break;
    case KeyType::integer:
      if (auto i = node.value_exact<int64_t>()) value = fmt::format("{}", *i), ok = true;
      break;
    case KeyType::number:
      if (node.is_integer() || node.is_floating_point()) value = fmt::format("{}", *node.value<double>()), ok = true;
      break;
    case KeyType::boolean:
      if (auto b = node.value_exact<bool>()) value = *b ? "true" : "false", ok = true;
      break;
  }
  // A string's accepted values where they are a list ("expects string (one of: on, off)").
  const bool listed = k->type == KeyType::string && k->accepts.starts_with("one of: ");
  FAST_ENFORCE(ok, "{}: key '{}' expects {}{}, got {}", where, key, key_type_name(k->type),
               listed ? fmt::format(" ({})", k->accepts) : std::string(), toml_type_name(node));
  return value;
}

void apply_config_value(TrainOptions& options, std::string_view key, const toml::node& node, const std::string& where) {
  apply_setting(options, key, config_value_text(key, node, where), fmt::format("{}: key '{}'", where, key));
}

void apply_config_table(TrainOptions& options, const toml::table& table, const std::filesystem::path& file) {
  for (const auto& [name, node] : table)
    apply_config_value(options, name.str(), node,
                       fmt::format("config file '{}' line {}", file.string(), node.source().begin.line));
}

std::vector<std::string> apply_config_file(TrainOptions& options, const std::filesystem::path& file) {
  const toml::table table = parse_toml_file(file);
  apply_config_table(options, table, file);
  std::vector<std::string> keys;
  for (const auto& [name, node] : table) keys.emplace_back(find_key(name.str())->name);  // every key is known
  return keys;
}

namespace {

// Whether `given` (keys in either spelling) holds the key `name`.
bool was_given(const std::vector<std::string>& given, const std::string& name) {
  return std::any_of(given.begin(), given.end(), [&](const std::string& key) {
    const ConfigKey* k = find_key(key);
    return k != nullptr && k->name == name;
  });
}

}  // namespace

std::vector<std::string> unread_strategy_options(std::string_view strategy, const std::vector<std::string>& given) {
  std::vector<std::string> warnings;
  for (const strategy::DeclaredOption& d : strategy::declared_options()) {
    if (d.read_by(strategy)) continue;
    if (was_given(given, d.option.name()))
      warnings.push_back(fmt::format("{}: an option of {}; {} does not read it", d.option.name(),
                                     fmt::join(d.strategies, ", "), strategy));
  }
  return warnings;
}

std::vector<std::string> inert_settings(const TrainOptions& options, const std::vector<std::string>& given) {
  std::vector<std::string> warnings;
  for (const ConfigKey& k : config_keys()) {
    if (!k.inert) continue;
    if (!was_given(given, k.name) ||
        (k.strategy_option && !unread_strategy_options(options.worker.strategy.name, {k.name}).empty()))
      continue;  // not given, or unread by the strategy (unread_strategy_options warns)
    if (const std::optional<std::string> why = k.inert(options))
      warnings.push_back(fmt::format("{}: changes nothing with {}", k.name, *why));
  }
  return warnings;
}

namespace {

std::string default_text(const ConfigKey& k, const TrainOptions& defaults) {
  const std::string def = k.get(defaults);
  return def.empty() ? "\"\"" : def;
}

}  // namespace

std::vector<core::EnvTable> environment_tables() {
  std::vector<core::EnvTable> tables{core::env_table(), runtime::runtime_environment()};
  for (const runtime::RuntimeBackend& b : runtime::runtime_backends())
    if (!b.environment.empty()) tables.push_back(b.environment);
  tables.push_back(training::training_environment());
  return tables;
}

namespace {

// The keys that another setting can turn off (ConfigKey::inert), as "`a`, `b`, `c`".
std::string inert_key_list() {
  std::vector<std::string> names;
  for (const ConfigKey& k : config_keys())
    if (k.inert) names.push_back(fmt::format("`{}`", k.name));
  return fmt::format("{}", fmt::join(names, ", "));
}

// The strategy options counted in steps that a run can be too short for (StrategyOption::short_run).
std::string short_run_key_list() {
  std::vector<std::string> names;
  for (const strategy::DeclaredOption& d : strategy::declared_options())
    if (d.option.short_run()) names.push_back(fmt::format("`{}`", d.option.name()));
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

std::string config_markdown() {
  const TrainOptions defaults;
  std::string md =
      "| key | flag | type | default | accepts | description |\n"
      "| --- | --- | --- | --- | --- | --- |\n";
  for (const ConfigKey& k : config_keys())
    if (!k.strategy_option)
      md += fmt::format("| `{}` | `{}` | {} | `{}` | {} | {} |\n", k.name, flag_name(k.name), key_type_name(k.type),
                        default_text(k, defaults), markdown_cell(k.accepts), markdown_cell(k.description));
  md +=
      "\n### Strategy options\n\nDeclared by the strategies in their registry entries "
      "(docs/architecture.md, \"Adding a strategy\"); the description starts with the strategies that read the "
      "option (none: every strategy). Setting an option the chosen strategy does not read changes nothing; "
      "`fast train` and `fast.Worker` name it in a warning. So is a setting that another setting can turn off "
      "(" +
      inert_key_list() +
      ") when it does, with that setting: \"dgc_masking: changes nothing with dgc = false\". A step count that the "
      "run is too short for (" +
      short_run_key_list() +
      ") is named in a warning as the run starts, with what the run misses: \"period = 8: the first average of the "
      "models would come at step 8, after the run's 5 steps per worker: ...\".\n\n"
      "| key | flag | type | default | accepts | description |\n"
      "| --- | --- | --- | --- | --- | --- |\n";
  for (const ConfigKey& k : config_keys())
    if (k.strategy_option)
      md += fmt::format("| `{}` | `{}` | {} | `{}` | {} | {} |\n", k.name, flag_name(k.name), key_type_name(k.type),
                        default_text(k, defaults), markdown_cell(k.accepts), markdown_cell(k.description));
  md += spec_markdown();
  md += "\n### Environment variables\n\n| variable | type | default | description |\n| --- | --- | --- | --- |\n";
  for (const core::EnvTable table : environment_tables())
    for (const core::EnvVar& v : table)
      md += fmt::format("| `{}` | {} | `{}` | {} |\n", v.name,
                        v.type == core::EnvType::integer ? fmt::format("integer, {} to {}", v.min, v.max)
                                                         : std::string(core::env_type_name(v.type)),
                        v.default_value, v.description);
  return md;
}

}  // namespace fast::settings
