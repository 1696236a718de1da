#include "compare.hpp"

#include <cctype>
#include <fstream>

#include <fmt/format.h>

#include "config.hpp"
#include "report.hpp"
#include "fast/core/error.hpp"

namespace fast::cli {

namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  FAST_ENFORCE_AS(core::IoError, out.good(), "fast compare: cannot write '{}'", path.string());
  out << text;
  out.flush();
  FAST_ENFORCE_AS(core::IoError, out.good(), "fast compare: writing '{}' failed", path.string());
}

std::string toml_string(const std::string& s) {
  std::string quoted = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') quoted += '\\';
    quoted += ch;
  }
  return quoted + "\"";
}

void write_tables(const fs::path& out, const std::vector<RunResult>& results) {
  const CompareTable table = build_table(results);
  write_file(out / "compare.md", to_markdown(table));
  write_file(out / "compare.csv", to_csv(table));
  // report.html, from the metrics files of the runs done so far (none when the runs write none).
  if (const std::vector<ReportRun> runs = read_compare_runs(out); !runs.empty())
    write_report_page(runs, out / "report.html", fs::absolute(out).lexically_normal().filename().string());
}

std::string optional_seconds(const nlohmann::json& v) {
  return v.is_number() ? fmt::format("{:.2f} s", v.get<double>()) : std::string("not reached");
}

}  // namespace

std::string slug(const std::string& label) {
  std::string s;
  for (unsigned char ch : label) {
    if (std::isalnum(ch) != 0) {
      s += static_cast<char>(std::tolower(ch));
    } else if (!s.empty() && s.back() != '-') {
      s += '-';
    }
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  if (s.size() > 60) s.resize(60);
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s.empty() ? "run" : s;
}

std::string config_toml(const torch::TrainOptions& options) {
  const torch::TrainOptions defaults;
  std::string text;
  for (const ConfigKey& k : config_keys()) {
    if (k.name == "metrics" || k.name == "summary") continue;  // per repetition, set by fast compare
    const std::string value = k.get(options);
    if (value == k.get(defaults)) continue;
    const bool quoted = k.type == KeyType::string || k.type == KeyType::path;
    text += fmt::format("{} = {}\n", k.name, quoted ? toml_string(value) : value);
  }
  return text;
}

std::vector<RunResult> run_comparison(const std::vector<RunSpec>& specs, const CompareOptions& options,
                                      const TrainFn& train, std::FILE* log) {
  FAST_ENFORCE(options.repeat >= 1, "fast compare: --repeat expects an integer >= 1, got {}", options.repeat);
  std::error_code ec;
  fs::create_directories(options.out, ec);
  FAST_ENFORCE_AS(core::IoError, !ec, "fast compare: cannot create the output folder '{}': {}", options.out.string(),
                  ec.message());
  std::vector<RunResult> results;
  for (const RunSpec& spec : specs) results.push_back({spec.label, spec.options, {}});

  const std::size_t width = fmt::format("{}", specs.size()).size() < 2 ? 2 : fmt::format("{}", specs.size()).size();
  const std::size_t total = specs.size() * static_cast<std::size_t>(options.repeat);
  std::size_t done = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const fs::path dir = options.out / fmt::format("{:0{}}-{}", i + 1, width, slug(specs[i].label));
    fs::create_directories(dir, ec);
    FAST_ENFORCE_AS(core::IoError, !ec, "fast compare: cannot create '{}': {}", dir.string(), ec.message());
    write_file(dir / "config.toml", config_toml(specs[i].options));
    try {
      for (int k = 1; k <= options.repeat; ++k) {
        torch::TrainOptions run = specs[i].options;
        run.seed = specs[i].options.seed + static_cast<std::uint64_t>(k - 1);
        const fs::path rep = dir / fmt::format("{}", k);
        fs::create_directories(rep, ec);
        FAST_ENFORCE_AS(core::IoError, !ec, "fast compare: cannot create '{}': {}", rep.string(), ec.message());
        run.metrics = rep / "metrics.jsonl";
        run.summary = rep / "summary.json";
        ++done;
        if (log != nullptr) {
          std::fprintf(log, "[%zu/%zu] %s (repetition %d/%d, seed %llu): %s, %d workers, %s\n", done, total,
                       specs[i].label.c_str(), k, options.repeat, static_cast<unsigned long long>(run.seed),
                       run.worker.strategy.name.c_str(), run.workers, rep.string().c_str());
          std::fflush(log);
        }
        const nlohmann::json summary = train(run);
        results[i].summaries.push_back(summary);
        if (log != nullptr) {
          std::fprintf(log, "[%zu/%zu] %s: final accuracy %.4f, time to target %s, %.1f s\n", done, total,
                       specs[i].label.c_str(), summary.value("final_accuracy", 0.0),
                       optional_seconds(summary.value("time_to_target_seconds", nlohmann::json())).c_str(),
                       summary.value("wall_seconds", 0.0));
          std::fflush(log);
        }
      }
    } catch (...) {
      // The completed configurations stay in the table; a partial one is left out.
      results[i].summaries.clear();
      write_tables(options.out, results);
      throw;
    }
    write_tables(options.out, results);
  }
  return results;
}

}  // namespace fast::cli
