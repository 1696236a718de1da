#include "compare_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compare.hpp"
#include "config.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/slowdown.hpp"

namespace fast::cli {

namespace {

namespace fs = std::filesystem;

std::string where(const fs::path& file, const toml::node& node) {
  return fmt::format("sweep file '{}' line {}", file.string(), node.source().begin.line);
}

std::string canonical(std::string_view key) {
  const settings::ConfigKey* k = settings::find_config_key(key);
  return k != nullptr ? std::string(k->name) : std::string(key);
}

// One swept key and its values, in file order.
struct Axis {
  std::string key;
  std::vector<const toml::node*> values;
  toml::source_position position;
};

// The [[run]] entries: their settings (without `name`) and the optional name.
struct RunEntry {
  const toml::table* table = nullptr;
  std::string name;
};

training::TrainOptions base_options(const toml::table& table, const fs::path& file) {
  training::TrainOptions options;
  const toml::node* base = table.get("base");
  if (base == nullptr) return options;
  if (auto path = base->value_exact<std::string>()) {
    fs::path p(*path);
    if (p.is_relative()) p = file.parent_path() / p;
    FAST_ENFORCE_AS(core::IoError, fs::exists(p), "{}: key 'base': config file '{}' does not exist", where(file, *base),
                    p.string());
    settings::apply_config_file(options, p);
  } else if (const toml::table* inline_table = base->as_table()) {
    settings::apply_config_table(options, *inline_table, file);
  } else {
    FAST_THROW(core::InvalidArgument, "{}: key 'base' expects a config file path (string) or a table",
               where(file, *base));
  }
  return options;
}

std::vector<Axis> sweep_axes(const toml::table& table, const fs::path& file) {
  std::vector<Axis> axes;
  const toml::node* sweep = table.get("sweep");
  if (sweep == nullptr) return axes;
  const toml::table* t = sweep->as_table();
  FAST_ENFORCE(t != nullptr, "{}: key 'sweep' expects a table ([sweep] with key = [values]), got another type",
               where(file, *sweep));
  for (const auto& [name, node] : *t) {
    const std::string key(name.str());
    const toml::array* values = node.as_array();
    FAST_ENFORCE(values != nullptr && !values->empty(), "{}: [sweep] key '{}' expects a non-empty list of values",
                 where(file, node), key);
    Axis axis{canonical(key), {}, node.source().begin};
    for (std::size_t i = 0; i < values->size(); ++i) {
      // Type-checks the value now, so that a bad item is reported before anything runs.
      (void)settings::config_value_text(key, *values->get(i),
                                        fmt::format("{}: [sweep] item {}", where(file, node), i + 1));
      axis.values.push_back(values->get(i));
    }
    axes.push_back(std::move(axis));
  }
  // toml++ tables are ordered by key; the combinations follow the file's order instead.
  std::sort(axes.begin(), axes.end(), [](const Axis& a, const Axis& b) {
    return std::pair(a.position.line, a.position.column) < std::pair(b.position.line, b.position.column);
  });
  return axes;
}

std::vector<RunEntry> run_entries(const toml::table& table, const fs::path& file) {
  std::vector<RunEntry> entries;
  const toml::node* run = table.get("run");
  if (run == nullptr) return entries;
  const toml::array* list = run->as_array();
  FAST_ENFORCE(list != nullptr, "{}: key 'run' expects a list of tables ([[run]] sections)", where(file, *run));
  for (std::size_t i = 0; i < list->size(); ++i) {
    const toml::node& item = *list->get(i);
    const toml::table* t = item.as_table();
    FAST_ENFORCE(t != nullptr, "{}: [[run]] {} expects a table of settings", where(file, item), i + 1);
    RunEntry entry{t, ""};
    if (const toml::node* name = t->get("name")) {
      auto text = name->value_exact<std::string>();
      FAST_ENFORCE(text.has_value() && !text->empty(), "{}: [[run]] key 'name' expects a non-empty string",
                   where(file, *name));
      entry.name = *text;
    }
    entries.push_back(entry);
  }
  return entries;
}

// The settings a comparison gives each run itself or takes no value of (ConfigKey::compare_sets,
// compare_refuses): a flag for one of the first is refused, and a value other than the default of
// one of the second, from a flag or from a run's files.
void check_compare_keys(const std::vector<RunSpec>& runs, const std::vector<SettingOverride>& overrides) {
  const training::TrainOptions defaults;
  for (const SettingOverride& o : overrides) {
    const settings::ConfigKey* key = settings::find_config_key(o.key);
    if (key == nullptr) continue;  // apply_setting named it already
    FAST_ENFORCE(!key->compare_sets,
                 "{}: fast compare writes each run's {} itself, in the run's folder under --out (docs/compare.md); {} "
                 "is a setting of fast train",
                 o.origin, key->name, o.origin);
    FAST_ENFORCE(key->compare_refuses.empty() || o.value == key->get(defaults),
                 "{}: {}; {} is a setting of fast train, not of fast compare", o.origin, key->compare_refuses,
                 o.origin);
  }
  for (const RunSpec& spec : runs)
    for (const settings::ConfigKey& key : settings::config_keys()) {
      FAST_ENFORCE(
          !key.compare_sets || std::find(spec.varied.begin(), spec.varied.end(), key.name) == spec.varied.end(),
          "sweep file '{}' varies {}, which changes nothing: fast compare writes each run's {} itself, in "
          "the run's folder under --out (docs/compare.md); remove it from [sweep]",
          spec.source.string(), key.name, key.name);
      FAST_ENFORCE(key.compare_refuses.empty() || key.get(spec.options) == key.get(defaults),
                   "run '{}' of '{}': {} = {}: {}; {} is a setting of fast train, not of fast compare", spec.label,
                   spec.source.string(), key.name, key.get(spec.options), key.compare_refuses, key.name);
    }
}

// Runs whose settings are the same once those that change nothing are left out (config_toml: a
// strategy option the strategy does not read, a setting another one turns off) are the same run
// under two labels: each such pair is named in a warning on `log`.
void warn_of_same_runs(const std::vector<RunSpec>& runs, std::FILE* log) {
  std::vector<std::string> configs;
  for (const RunSpec& spec : runs) configs.push_back(config_toml(spec.options));
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (std::size_t j = i + 1; j < runs.size(); ++j)
      if (configs[i] == configs[j] && log != nullptr)
        std::fprintf(log,
                     "fast compare: warning: runs '%s' and '%s' are the same run: their settings differ only in "
                     "ones that change nothing for it (a strategy option its strategy does not read, or a setting "
                     "another one turns off: docs/config.md)\n",
                     runs[i].label.c_str(), runs[j].label.c_str());
}

}  // namespace

bool is_sweep_file(const toml::table& table) {
  return table.contains("base") || table.contains("sweep") || table.contains("run");
}

std::vector<RunSpec> expand_sweep(const toml::table& table, const fs::path& file) {
  for (const auto& [name, node] : table) {
    const std::string_view key = name.str();
    FAST_ENFORCE(key == "base" || key == "sweep" || key == "run",
                 "{}: unknown key '{}'; a sweep file holds only base, [sweep] and [[run]] (put settings under "
                 "[base] or in the base config file)",
                 where(file, node), key);
  }
  const training::TrainOptions base = base_options(table, file);
  const std::vector<Axis> axes = sweep_axes(table, file);
  std::vector<RunEntry> entries = run_entries(table, file);

  for (const RunEntry& e : entries)
    for (const auto& [name, node] : *e.table) {
      if (name.str() == "name") continue;
      const std::string key = canonical(name.str());
      for (const Axis& a : axes)
        FAST_ENFORCE(a.key != key, "{}: [[run]] key '{}' is also swept in [sweep]; set it in one place only",
                     where(file, node), name.str());
      // Checks the key and its type now; the value itself is checked when applied below.
      (void)settings::config_value_text(name.str(), node, where(file, node));
    }
  if (entries.empty()) entries.push_back({});

  std::size_t combinations = 1;
  for (const Axis& a : axes) combinations *= a.values.size();

  std::vector<RunSpec> runs;
  for (const RunEntry& entry : entries) {
    for (std::size_t c = 0; c < combinations; ++c) {
      RunSpec spec{"", file, base, {}};
      std::vector<std::string> label;
      if (!entry.name.empty()) label.push_back(entry.name);
      if (entry.table != nullptr)
        for (const auto& [name, node] : *entry.table) {
          if (name.str() == "name") continue;
          settings::apply_config_value(spec.options, name.str(), node, where(file, node));
          spec.varied.push_back(canonical(name.str()));
          if (entry.name.empty())
            label.push_back(
                fmt::format("{}={}", canonical(name.str()), settings::config_value_text(name.str(), node, "")));
        }
      // Mixed-radix digits of c, the last axis varying fastest.
      std::size_t rest = c;
      std::vector<std::size_t> index(axes.size());
      for (std::size_t a = axes.size(); a-- > 0;) {
        index[a] = rest % axes[a].values.size();
        rest /= axes[a].values.size();
      }
      for (std::size_t a = 0; a < axes.size(); ++a) {
        const toml::node& value = *axes[a].values[index[a]];
        settings::apply_config_value(spec.options, axes[a].key, value,
                                     fmt::format("{}: [sweep] item {}", where(file, value), index[a] + 1));
        spec.varied.push_back(axes[a].key);
        label.push_back(fmt::format("{}={}", axes[a].key, settings::config_value_text(axes[a].key, value, "")));
      }
      spec.label = label.empty() ? file.stem().string() : fmt::format("{}", fmt::join(label, ", "));
      runs.push_back(std::move(spec));
    }
  }
  return runs;
}

std::vector<RunSpec> plan_runs(const std::vector<fs::path>& files, const std::vector<SettingOverride>& overrides,
                               const RunCheck& check) {
  FAST_ENFORCE(!files.empty(), "fast compare: expected at least one config or sweep file, got none");
  std::vector<RunSpec> runs;
  for (const fs::path& file : files) {
    const toml::table table = settings::parse_toml_file(file);
    if (is_sweep_file(table)) {
      for (RunSpec& spec : expand_sweep(table, file)) runs.push_back(std::move(spec));
    } else {
      RunSpec spec{file.stem().string(), file, {}, {}};
      settings::apply_config_table(spec.options, table, file);
      runs.push_back(std::move(spec));
    }
  }
  for (RunSpec& spec : runs)
    for (const SettingOverride& o : overrides) {
      const std::string key = canonical(o.key);
      FAST_ENFORCE(std::find(spec.varied.begin(), spec.varied.end(), key) == spec.varied.end(),
                   "{}: sets '{}', which sweep file '{}' varies (run '{}'); remove the flag or the sweep entry",
                   o.origin, key, spec.source.string(), spec.label);
      settings::apply_setting(spec.options, o.key, o.value, o.origin);
    }
  check_compare_keys(runs, overrides);
  warn_of_same_runs(runs, stderr);
  // The table's rows and the report's series are told apart by their labels alone.
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (std::size_t j = i + 1; j < runs.size(); ++j)
      FAST_ENFORCE(runs[i].label != runs[j].label,
                   "fast compare: runs {} ('{}') and {} ('{}') are both labelled '{}', which the table and the report "
                   "could not tell apart; expected distinct labels (a [[run]]'s `name`, or the config file's name)",
                   i + 1, runs[i].source.string(), j + 1, runs[j].source.string(), runs[i].label);
  for (const RunSpec& spec : runs) {
    try {
      runtime::Slowdown(spec.options.slowdown, 0, spec.options.workers);  // factors: one per worker
      if (check) check(spec.options);
    } catch (const core::InvalidArgument& e) {
      FAST_THROW(core::InvalidArgument, "run '{}' of '{}': {}", spec.label, spec.source.string(), e.what());
    } catch (const core::IoError& e) {  // e.g. a TorchScript model file that cannot be read
      FAST_THROW(core::IoError, "run '{}' of '{}': {}", spec.label, spec.source.string(), e.what());
    }
  }
  return runs;
}

}  // namespace fast::cli
