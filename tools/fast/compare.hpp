#pragma once
// `fast compare`: runs planned configurations (compare_plan.hpp) one after the other and writes the
// comparison table (compare_table.hpp). The training itself is a function given by the caller
// (fast::torch::train in the command, a fake in the tests), so this file does not need libtorch.
//
// Output folder (CompareOptions::out):
//   NN-SLUG/config.toml        "# run: LABEL", then the run's settings that differ from the defaults
//                              (seed: repetition 1's); `fast train --config` on it reproduces repetition 1
//   NN-SLUG/K/metrics.jsonl    repetition K (1..repeat): metrics and summary of `fast train`
//   NN-SLUG/K/summary.json
//   compare.md, compare.csv    the table, rewritten after every configuration, so a failure keeps the
//                              rows done
//   report.html                `fast report` of the folder (report.hpp), rewritten with the table
// NN is the 1-based index of the configuration, SLUG its label in lowercase letters, digits and '-'.

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare_plan.hpp"
#include "compare_table.hpp"

namespace fast::cli {

struct CompareOptions {
  std::filesystem::path out = "compare-out";
  int repeat = 1;  // runs per configuration; repetition K (1-based) uses seed + K - 1
  int jobs = 1;    // simulated runs (runtime sim, each in a child process) run this many side by side;
                   // other runs one at a time, after them (they time the machine)
};

// Trains one run and returns its summary (docs/metrics.md). `options.metrics` and
// `options.summary` are already set to the run's files.
using TrainFn = std::function<nlohmann::json(const training::TrainOptions& options)>;

// "strategy=adpsgd, workers=4" -> "strategy-adpsgd-workers-4" (at most 60 characters, never empty).
std::string slug(const std::string& label);

// The settings of `options` that differ from the defaults, as a TOML config file; strategy options
// that only other strategies read are left out (they change nothing for this run).
std::string config_toml(const training::TrainOptions& options);

// Runs every spec `options.repeat` times through `train`, printing one line per run on `log` before
// and after it (with the sweep's elapsed time and an estimate of what is left), and writes the
// output folder above. Returns the results in spec order. A repetition whose summary.json exists
// from an earlier invocation with the same config.toml is not run again (its summary is read back);
// a changed configuration runs all its repetitions. `train` may be called from several threads at
// once for simulated runs when options.jobs > 1. An exception from `train` stops the runs not yet
// started and propagates (the first one) after the runs under way ended and the table of the
// configurations finished so far is written.
std::vector<RunResult> run_comparison(const std::vector<RunSpec>& specs, const CompareOptions& options,
                                      const TrainFn& train, std::FILE* log = stderr);

}  // namespace fast::cli
