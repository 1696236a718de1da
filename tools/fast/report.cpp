#include "report.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/metrics/records.hpp"
#include "text_file.hpp"

namespace fast::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& file) { return read_text_file(file, "fast report"); }

// Appends the records of one JSONL file; a malformed line names the file and line. A run's summary
// (one JSON object with param_hash, possibly over several lines) is named as such.
void read_records(const fs::path& file, std::vector<json>& into) {
  std::ifstream in(file);
  FAST_ENFORCE_AS(core::IoError, in.good(), "fast report: cannot read '{}'", file.string());
  if (file.extension() == ".json") {
    const json whole = json::parse(read_text(file), nullptr, false);
    FAST_ENFORCE(whole.is_discarded() || !whole.is_object() || !whole.contains("param_hash"),
                 "fast report: '{}' is a run's summary (--summary); expected its metrics file (--metrics, "
                 "*.jsonl), the run's folder or a fast compare folder",
                 file.string());
  }
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    json record = json::parse(line, nullptr, false);
    if (record.is_discarded() && in.eof()) {  // a last line without its newline: cut off mid-write
      std::fprintf(stderr,
                   "fast report: warning: '%s' line %d: an incomplete last record, left out (the run was stopped "
                   "while writing it)\n",
                   file.string().c_str(), n);
      break;
    }
    FAST_ENFORCE(!record.is_discarded() && record.is_object() && record.contains("event"),
                 "fast report: '{}' line {}: expected a metrics record (a JSON object with \"event\"), got '{}'",
                 file.string(), n, line.substr(0, 80));
    into.push_back(std::move(record));
  }
}

// The metrics files of a run's folder: every *.jsonl in it (several processes' rank files together),
// or every file of another extension, sorted.
std::vector<fs::path> metrics_files(const fs::path& dir, const std::string& extension = ".jsonl") {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == extension) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// One run from its metrics files: one `start` and one `end` kept (every process writes both),
// the other records in time order.
ReportRun read_run(const std::vector<fs::path>& files, std::string label, int repetition, std::string config) {
  std::vector<json> all;
  for (const fs::path& f : files) read_records(f, all);
  ReportRun run{std::move(label), repetition, std::move(config), {}};
  json start, end;
  std::vector<json> rest;
  for (json& r : all) {
    const std::string event = r["event"].get<std::string>();
    if (event == "start") {
      if (start.is_null()) start = std::move(r);
    } else if (event == "end") {
      if (end.is_null()) end = std::move(r);
    } else {
      rest.push_back(std::move(r));
    }
  }
  FAST_ENFORCE(!start.is_null(), "fast report: no 'start' record in {} (is it a `fast train --metrics` file?)",
               files.front().string());
  std::stable_sort(rest.begin(), rest.end(),
                   [](const json& a, const json& b) { return a.value("time", 0.0) < b.value("time", 0.0); });
  run.records.push_back(std::move(start));
  for (json& r : rest) run.records.push_back(std::move(r));
  if (!end.is_null()) run.records.push_back(std::move(end));
  return run;
}

bool is_compare_folder(const fs::path& dir) {
  return fs::exists(dir / "compare.md") || fs::exists(dir / "compare.csv");
}

}  // namespace

std::vector<ReportRun> read_compare_runs(const fs::path& dir) {
  std::vector<fs::path> configs;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory()) configs.push_back(entry.path());
  std::sort(configs.begin(), configs.end());
  std::vector<ReportRun> runs;
  for (const fs::path& c : configs) {
    const std::string config = fs::exists(c / "config.toml") ? read_text(c / "config.toml") : "";
    // `fast compare` starts config.toml with "# run: LABEL"; older folders: the folder's name.
    std::string label = c.filename().string();
    if (config.rfind("# run: ", 0) == 0) label = config.substr(7, config.find('\n') - 7);
    std::vector<std::pair<int, fs::path>> reps;
    for (const auto& entry : fs::directory_iterator(c)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory() && !name.empty() && std::all_of(name.begin(), name.end(), ::isdigit))
        reps.emplace_back(std::stoi(name), entry.path());
    }
    std::sort(reps.begin(), reps.end());
    for (const auto& [k, rep] : reps) {
      const std::vector<fs::path> files = metrics_files(rep);
      if (files.empty()) continue;  // a repetition not run (yet)
      runs.push_back(read_run(files, label, k, config));
    }
  }
  return runs;
}

// The metrics files of the run that `file` names: the file itself; or, for the --metrics path of
// a run of several processes (NAME.EXT, which they write as NAME.rankR.EXT) or one of its rank
// files, every NAME.rankR.EXT beside it. Empty when there is none.
std::vector<fs::path> run_files_of(const fs::path& file) {
  const std::string stem = metrics::run_metrics_stem(file);
  const bool rank_file = stem != file.stem().string();
  if (fs::is_regular_file(file) && !rank_file) return {file};
  std::vector<fs::path> files;
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (!fs::is_directory(folder)) return files;
  for (const fs::path& f : metrics_files(folder, file.extension().string()))
    if (metrics::run_metrics_stem(f) == stem && f.stem().string() != stem) files.push_back(f);
  return files;
}

std::vector<ReportRun> read_report_runs(const fs::path& dir) {
  std::vector<ReportRun> runs;
  if (!fs::is_directory(dir)) {
    const std::vector<fs::path> files = run_files_of(dir);
    FAST_ENFORCE_AS(core::IoError, !files.empty() || fs::exists(dir),
                    "fast report: '{}' does not exist (nor do the rank files {}.rankR{} of a run of several "
                    "processes beside it)",
                    dir.string(), metrics::run_metrics_stem(dir), dir.extension().string());
    FAST_ENFORCE(!files.empty(), "fast report: '{}' is not a regular file", dir.string());
    runs.push_back(read_run(files, metrics::run_metrics_stem(dir), 1, ""));
  } else if (is_compare_folder(dir)) {
    runs = read_compare_runs(dir);
  } else {
    const std::vector<fs::path> files = metrics_files(dir);
    FAST_ENFORCE(!files.empty(),
                 "fast report: '{}' holds neither a comparison (compare.md and NN-NAME/K/metrics.jsonl, from `fast "
                 "compare`) nor runs' metrics (*.jsonl, from `fast train --metrics`)",
                 dir.string());
    // One run per NAME: its --metrics file NAME.jsonl, or its processes' NAME.rankR.jsonl merged;
    // a folder of one run is titled by the folder, each run of several by its NAME.
    std::vector<std::string> stems;
    for (const fs::path& f : files) stems.push_back(metrics::run_metrics_stem(f));
    std::sort(stems.begin(), stems.end());
    stems.erase(std::unique(stems.begin(), stems.end()), stems.end());
    for (const std::string& stem : stems) {
      std::vector<fs::path> of_run;
      std::copy_if(files.begin(), files.end(), std::back_inserter(of_run),
                   [&stem](const fs::path& f) { return metrics::run_metrics_stem(f) == stem; });
      runs.push_back(read_run(of_run, stems.size() == 1 ? fs::absolute(dir).lexically_normal().filename().string() : stem,
                              1, ""));
    }
  }
  FAST_ENFORCE(!runs.empty(), "fast report: '{}' is a comparison folder without any finished run", dir.string());
  return runs;
}

}  // namespace fast::cli
