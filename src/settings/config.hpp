#pragma once
// The `fast train` settings, in one table: key, type, default, description. The same table parses
// the TOML config file, defines the command-line flags (--key VALUE), prints --help and is the
// source of docs/config.md (`fast config-doc`). Precedence: defaults < config file < flags.
// The table holds the general settings (config_keys.cpp) and then one key per option the strategies
// declare (fast/strategy/registry.hpp), generated from the declarations: a strategy registered
// before the table is read brings its options as keys and flags.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "fast/core/env.hpp"
#include "fast/core/setting.hpp"
#include "fast/training/train_options.hpp"

namespace fast::settings {

// boolean: a flag without a value on the command line (--insecure), true/false in files.
enum class KeyType { string, integer, number, path, boolean };

struct ConfigKey {
  std::string name;
  KeyType type;
  std::string description;
  // Writes the value (already checked to be of `type`, given as text) into options; throws
  // InvalidArgument naming the key for an out-of-range value.
  std::function<void(training::TrainOptions&, const std::string&)> set;
  // The current value as text (for --help and docs: the defaults).
  std::function<std::string(const training::TrainOptions&)> get;
  bool strategy_option = false;  // generated from a strategy's option declaration
  std::string accepts;           // what a value must be ("an integer >= 1", "one of: a, b"), for docs
  // Integer and number settings: the declaration whose range is the only check of the value (a
  // strategy option's own, or the general setting's, fast/core/setting.hpp).
  std::optional<core::Setting> declaration;
  // Why the value changes nothing under the other settings, as the setting that turns it off
  // ("dgc = false"); nullopt when it has an effect. Unset: it always has one.
  std::function<std::optional<std::string>(const training::TrainOptions&)> inert;
  // `fast compare` (docs/compare.md). compare_sets: it gives each run its own value (a file in the
  // run's folder): a config file's value is replaced, a flag is refused. compare_refuses: why a
  // comparison takes no value other than the default (every run would share the file or folder it
  // names); empty: it takes any.
  bool compare_sets = false;
  std::string compare_refuses;
  // Whether the processes of one run may give it different values (a file or folder of this
  // process, its rank, keys, ports, time limits, threads): left out of shared_settings().
  bool per_process = false;
};

// The table. Built on first use and again after a strategy registration (earlier tables stay
// valid); InvalidArgument when a strategy option has the name of a general setting. Thread-safe.
const std::vector<ConfigKey>& config_keys();
std::string_view key_type_name(KeyType type);
// The settings every process of a run must share (runtime::ProcessOptions::shared_settings): a
// JSON object of each key that is not per_process and its value as text.
std::string shared_settings(const training::TrainOptions& options);
// The command-line flag of a key: "--" + key with '_' spelled '-' (data_dir: --data-dir).
std::string flag_name(std::string_view key);

// The key named `name` ('-' accepted for '_'); nullptr if there is none.
const ConfigKey* find_config_key(std::string_view name);

// Parses a TOML file; errors (IoError when missing, InvalidArgument when malformed) name the file,
// line and column.
toml::table parse_toml_file(const std::filesystem::path& file);
// A TOML value of the setting `key` as the text apply_setting takes, after checking its TOML type
// against the key's type. `where` ("config file 'a.toml' line 3") starts every error message.
std::string config_value_text(std::string_view key, const toml::node& node, const std::string& where);
// Applies one TOML value (type-checked as above) to the setting `key`.
void apply_config_value(training::TrainOptions& options, std::string_view key, const toml::node& node,
                        const std::string& where);
// Applies every key of a table (a file's top level or an inline table read from `file`).
void apply_config_table(training::TrainOptions& options, const toml::table& table, const std::filesystem::path& file);

// Applies a TOML file and returns its keys, sorted ('_' spelling). Errors name the
// file, the key, the expected type and what was found; unknown keys are rejected with the list of
// known ones.
std::vector<std::string> apply_config_file(training::TrainOptions& options, const std::filesystem::path& file);
// One warning per key of `given` (settings a user set: config keys, flags, keyword arguments; '_'
// or '-' spelling) that is an option declared by other strategies only, so that `strategy` does
// not read it: "mode: an option of ps; allreduce does not read it". Empty when every one is read.
std::vector<std::string> unread_strategy_options(std::string_view strategy, const std::vector<std::string>& given);
// One warning per key of `given` (as above) that the chosen strategy reads but whose value changes
// nothing under the other settings (ConfigKey::inert): "dgc_masking: changes nothing with dgc =
// false". Empty when every one has an effect.
std::vector<std::string> inert_settings(const training::TrainOptions& options, const std::vector<std::string>& given);
// Applies one setting given as text (a command-line flag); `origin` names it in errors ("--batch").
void apply_setting(training::TrainOptions& options, std::string_view key, const std::string& text,
                   std::string_view origin);

// The environment variables of every layer (core/env.hpp): core's, the runtime layer's, each
// runtime backend's of this build, the training layer's; for --help and docs/config.md.
std::vector<core::EnvTable> environment_tables();

// docs/config.md body: the table of keys and the environment variables.
std::string config_markdown();
// The spec strings part of it: every spec family's forms and keys, with what each key accepts
// (spec_doc.cpp).
std::string spec_markdown();
// Text for a cell of a markdown table: every '|' escaped as "\\|".
std::string markdown_cell(std::string_view text);

}  // namespace fast::settings
