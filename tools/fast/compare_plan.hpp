#pragma once
// The runs of `fast compare`: read from config files and sweep files, expanded and validated before
// anything runs (docs/compare.md). No libtorch.
//
// A file is a sweep file when its top level has any of the keys `base`, `sweep`, `run` (none of
// which is a setting); otherwise it is a `fast train` config file and gives one run.
//
// Sweep file:
//   base = "fmnist-allreduce.toml"      # a config file (relative to the sweep file), or a table:
//   # [base]  workers = 4 ...           # inline settings; absent: the defaults
//   [sweep]                              # every combination of these lists (first key outermost)
//   strategy = ["allreduce", "adpsgd"]
//   workers = [4, 8]
//   [[run]]                              # and/or explicit runs: settings, and an optional name
//   name = "ps async"
//   strategy = "ps"
//   mode = "async"
// The runs are every [[run]] (one empty run when there is none) crossed with every combination of
// [sweep]; a key may not be both swept and set by a [[run]].

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "fast/training/train_options.hpp"

namespace fast::cli {

// One configuration to run, with every setting applied and checked.
struct RunSpec {
  std::string label;                // table row name: the config file's stem, or the run's name and swept values
  std::filesystem::path source;     // the file it comes from
  training::TrainOptions options;   // its settings (command-line overrides included)
  std::vector<std::string> varied;  // keys set by [sweep] or [[run]] (canonical key names)
};

// A `--key VALUE` given on the command line, applied to every run after its file.
struct SettingOverride {
  std::string key;     // a settings-table key ('-' or '_')
  std::string value;   // as text
  std::string origin;  // names it in errors: "--workers"
};

bool is_sweep_file(const toml::table& table);

// The runs of one sweep file (already parsed; `file` names it in errors and anchors a relative base).
std::vector<RunSpec> expand_sweep(const toml::table& table, const std::filesystem::path& file);

// A check of a whole run's settings beyond the settings table (`fast compare` passes
// torch::validate_options: the model, the strategy's options for the worker count, ...); throws
// InvalidArgument, or IoError for a file it cannot read.
using RunCheck = std::function<void(const training::TrainOptions& options)>;

// Every run of every file, in order, with the overrides applied. Throws InvalidArgument naming the
// file, line and key (or the flag) at the first bad input, IoError for a missing file; nothing is
// run by this. An override of a key that a sweep file varies is an error (it would make the swept
// runs identical), as is one of a key that compare sets itself, and any value of a key that every
// run would share (ConfigKey::compare_sets, compare_refuses). Each finished run is then checked as a whole (the
// slowdown factors against the workers, and `check`); those errors name the run's label and file.
std::vector<RunSpec> plan_runs(const std::vector<std::filesystem::path>& files,
                               const std::vector<SettingOverride>& overrides, const RunCheck& check = {});

}  // namespace fast::cli
