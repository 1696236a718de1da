#include "compare.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <exception>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "config.hpp"
#include "fast/core/error.hpp"
#include "fast/core/stop_request.hpp"
#include "fast/runtime/launcher.hpp"
#include "fast/runtime/registry.hpp"
#include "fast/training/run_identity.hpp"
#include "report.hpp"
#include "text_file.hpp"

namespace fast::cli {

namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& text) { write_text_file(path, text, "fast compare"); }

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

std::string config_toml(const training::TrainOptions& options) {
  const training::TrainOptions defaults;
  std::string text;
  for (const settings::ConfigKey& k : settings::config_keys()) {
    if (k.compare_sets) continue;  // per repetition, set by fast compare
    const std::string value = k.get(options);
    // lr is always written: without it the optimizer key would pick its own default lr.
    if (value == k.get(defaults) && k.name != "lr") continue;
    // An option only other strategies read changes nothing here (a sweep's base may set it for
    // some of its runs): left out, so that the run's `fast train` does not warn about it.
    if (k.strategy_option && !settings::unread_strategy_options(options.worker.strategy.name, {k.name}).empty())
      continue;
    // So is one another setting turns off (dgc_masking without dgc; ConfigKey::inert).
    if (!settings::inert_settings(options, {k.name}).empty()) continue;
    const bool quoted = k.type == settings::KeyType::string || k.type == settings::KeyType::path;
    text += fmt::format("{} = {}\n", k.name, quoted ? toml_string(value) : value);
  }
  return text;
}

namespace {

// One repetition of one configuration: its settings (seed and files set) and where its result goes.
struct Task {
  std::size_t config = 0;  // index into the specs
  int repetition = 1;      // 1-based
  training::TrainOptions run;
};

// The state shared by the activities that run tasks: results, the log, the first error.
class Runner {
 public:
  Runner(const std::vector<RunSpec>& specs, const CompareOptions& options, const TrainFn& train, std::FILE* log,
         std::size_t total)
      : options_(options), train_(train), log_(log), total_(total), start_(std::chrono::steady_clock::now()) {
    for (const RunSpec& spec : specs) {
      results_.push_back({spec.label, spec.options, {}});
      slots_.emplace_back(static_cast<std::size_t>(options.repeat));
    }
  }

  // A repetition that finished in an earlier invocation of the same configuration.
  // Every repetition is numbered once, when it starts or is reused: [K/N] on its lines.
  void reuse(const Task& t, nlohmann::json summary) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++done_;
    say(fmt::format("[{}/{}] {} (repetition {}/{}): done before, summary {} kept", ++numbered_, total_,
                    results_[t.config].label, t.repetition, options_.repeat, t.run.summary.string()));
    slots_[t.config][static_cast<std::size_t>(t.repetition - 1)] = std::move(summary);
  }

  // Runs the task unless an earlier one failed or a stop was requested (SIGINT, SIGTERM: the
  // sweep ends after the runs under way); records its summary or the first error. A run that the
  // stop interrupted is not kept: the same command runs it again.
  void run(const Task& t) {
    std::size_t number = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (error_ || core::stop_requested() != 0) return;
      number = ++numbered_;
      say(fmt::format("[{}/{}] {} (repetition {}/{}, seed {}): {}, {} workers, {}", number, total_,
                      results_[t.config].label, t.repetition, options_.repeat, t.run.seed, t.run.worker.strategy.name,
                      t.run.workers, t.run.summary.parent_path().string()));
    }
    try {
      nlohmann::json summary = train_(t.run);
      std::lock_guard<std::mutex> lock(mutex_);
      if (summary.value("interrupted", false)) {
        say(fmt::format("[{}/{}] {}: interrupted, not kept (the same command runs it again)", number, total_,
                        results_[t.config].label));
        return;
      }
      ++done_;
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      ++ran_;  // runs made by this invocation (not reused)
      const double eta = elapsed / static_cast<double>(ran_) * static_cast<double>(total_ - done_);
      say(
          fmt::format("[{}/{}] {}: final accuracy {:.4f}{}, time to target {}, {:.1f} s | sweep: {:.0f} s elapsed, "
                      "about {:.0f} s left",
                      number, total_, results_[t.config].label, summary.value("final_accuracy", 0.0),
                      summary.value("diverged", false) ? " (DIVERGED)" : "",
                      optional_seconds(summary.value("time_to_target_seconds", nlohmann::json())),
                      summary.value("wall_seconds", 0.0), elapsed, eta / std::max(1, options_.jobs)));
      slots_[t.config][static_cast<std::size_t>(t.repetition - 1)] = std::move(summary);
      write_locked();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (core::stop_requested() != 0) {  // a child run the signal reached too: interrupted, not failed
        say(fmt::format("[{}/{}] {}: interrupted, not kept (the same command runs it again)", number, total_,
                        results_[t.config].label));
        return;
      }
      if (!error_) error_ = std::current_exception();
    }
  }

  // The configurations whose repetitions all finished, in spec order; rethrows the first error
  // after writing their table.
  std::vector<RunResult> finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    write_locked();
    if (error_) std::rethrow_exception(error_);
    return complete();
  }

 private:
  std::vector<RunResult> complete() const {
    std::vector<RunResult> out = results_;
    for (std::size_t i = 0; i < out.size(); ++i) {
      const bool all = std::all_of(slots_[i].begin(), slots_[i].end(), [](const auto& s) { return s.has_value(); });
      if (all)
        for (const auto& s : slots_[i]) out[i].summaries.push_back(*s);
    }
    return out;
  }
  void write_locked() { write_tables(options_.out, complete()); }
  void say(const std::string& line) {
    if (log_ == nullptr) return;
    std::fprintf(log_, "%s\n", line.c_str());
    std::fflush(log_);
  }

  const CompareOptions& options_;
  const TrainFn& train_;
  std::FILE* log_;
  std::size_t total_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::vector<RunResult> results_;
  std::vector<std::vector<std::optional<nlohmann::json>>> slots_;  // [config][repetition - 1]
  std::size_t numbered_ = 0, done_ = 0, ran_ = 0;
  std::exception_ptr error_;
};

fs::path make_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  FAST_ENFORCE_AS(core::IoError, !ec, "fast compare: cannot create '{}': {}", dir.string(), ec.message());
  return dir;
}

// The settings a repetition's summary records ("settings": runtime::ProcessOptions::shared_settings)
// as the `fast train` of its config.toml computes them: the strategy options its strategy does not
// read and the settings another one turns off at their defaults, as config_toml leaves them out.
std::string recorded_settings(const training::TrainOptions& run) {
  nlohmann::json settings = nlohmann::json::parse(settings::shared_settings(run));
  const training::TrainOptions defaults;
  for (const settings::ConfigKey& k : settings::config_keys()) {
    if (!settings.contains(k.name)) continue;
    const bool unread =
        k.strategy_option && !settings::unread_strategy_options(run.worker.strategy.name, {k.name}).empty();
    if (unread || !settings::inert_settings(run, {k.name}).empty()) settings[k.name] = k.get(defaults);
  }
  return settings.dump();
}

// A summary left by an earlier invocation for the same settings, if any: one that does not parse or
// carries no run identity, settings or fingerprint (an older FAST's) is run again. InvalidArgument
// naming the file, the field or setting and both values when it carries another run's identity or
// settings than `run`'s (a file copied from another repetition or sweep), or content its
// fingerprint does not match (edited), before any run starts.
std::optional<nlohmann::json> earlier_summary(const fs::path& file, bool same_config,
                                              const training::TrainOptions& run) {
  if (!same_config || !fs::exists(file)) return std::nullopt;
  std::ifstream in(file);
  nlohmann::json summary = nlohmann::json::parse(in, nullptr, false);
  if (summary.is_discarded() || !summary.is_object() || !summary.contains("run") || !summary.contains("settings") ||
      !summary.contains("fingerprint") || summary.value("interrupted", false))  // an interrupted run runs again
    return std::nullopt;
  const nlohmann::json expected = training::settings_identity(run, training::workers_before_launch(run));
  const std::string why = training::identity_mismatch(summary["run"], expected, file.string());
  FAST_ENFORCE(why.empty(),
               "fast compare: {}; expected the summary of this repetition's settings (delete the file to run it "
               "again)",
               why);
  // The fingerprint covers the whole identity, the model's fields too (which only a built model
  // gives): it must still be that of the identity the file carries, or the file was edited.
  const nlohmann::json& saved = summary["run"];
  const nlohmann::json recomputed = training::with_fingerprint(saved)["fingerprint"];
  FAST_ENFORCE(!saved.contains("fingerprint") || saved["fingerprint"] == recomputed,
               "fast compare: '{}' has the run fingerprint {}, not that of the run identity it carries ({}): the file "
               "was edited; delete it to run the repetition again",
               file.string(), saved["fingerprint"].dump(), recomputed.dump());
  const std::string difference = runtime::settings_difference(
      summary["settings"].dump(), fmt::format("'{}'", file.string()), run.process.shared_settings, "this repetition");
  FAST_ENFORCE(difference.empty(),
               "fast compare: the summary of another configuration: {}; expected the summary of this repetition's "
               "settings (delete the file to run it again)",
               difference);
  FAST_ENFORCE(summary["fingerprint"] == training::with_fingerprint(summary)["fingerprint"],
               "fast compare: '{}' has the summary fingerprint {}, not that of its content ({}): the file was edited; "
               "delete it to run the repetition again",
               file.string(), summary["fingerprint"].dump(), training::with_fingerprint(summary)["fingerprint"].dump());
  return summary;
}

// The summaries of repetitions past `repeat` in configuration folder `dir`, whose settings changed:
// this invocation does not run them again, and a later one with a larger --repeat must not take
// them for its own (repetitions 1..repeat are run again and overwrite theirs).
void forget_repetitions(const fs::path& dir, int repeat) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool repetition = !name.empty() && name.size() <= 9 &&
                            std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    if (repetition && std::stoi(name) > repeat) fs::remove(e.path() / "summary.json", ec);
  }
}

}  // namespace

std::vector<RunResult> run_comparison(const std::vector<RunSpec>& specs, const CompareOptions& options,
                                      const TrainFn& train, std::FILE* log) {
  FAST_ENFORCE(options.repeat >= 1, "fast compare: --repeat expects an integer >= 1, got {}", options.repeat);
  FAST_ENFORCE(options.jobs >= 1, "fast compare: --jobs expects an integer >= 1, got {}", options.jobs);
  make_dir(options.out);
  const std::size_t width = std::max<std::size_t>(2, fmt::format("{}", specs.size()).size());
  Runner runner(specs, options, train, log, specs.size() * static_cast<std::size_t>(options.repeat));
  std::vector<Task> side_by_side, one_at_a_time;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const fs::path dir = make_dir(options.out / fmt::format("{:0{}}-{}", i + 1, width, slug(specs[i].label)));
    std::string label = specs[i].label;
    std::replace(label.begin(), label.end(), '\n', ' ');
    const std::string config = "# run: " + label + "\n" + config_toml(specs[i].options);
    const bool same_config =
        fs::exists(dir / "config.toml") && read_text_file(dir / "config.toml", "fast compare") == config;
    if (!same_config) forget_repetitions(dir, options.repeat);
    write_file(dir / "config.toml", config);
    for (int k = 1; k <= options.repeat; ++k) {
      Task t{i, k, specs[i].options};
      t.run.seed = specs[i].options.seed + static_cast<std::uint64_t>(k - 1);
      const fs::path rep = make_dir(dir / fmt::format("{}", k));
      t.run.metrics = rep / "metrics.jsonl";
      t.run.summary = rep / "summary.json";
      t.run.process.shared_settings = recorded_settings(t.run);  // what its summary records
      if (auto summary = earlier_summary(t.run.summary, same_config, t.run)) {
        runner.reuse(t, std::move(*summary));
        continue;
      }
      fs::remove(t.run.summary);  // a stale one (other settings) must not outlive a failed run
      (options.jobs > 1 && runtime::find_runtime(t.run.runtime).simulated_clock ? side_by_side : one_at_a_time)
          .push_back(std::move(t));
    }
  }
  // Simulated runs (each a child process, its clock simulated) side by side; then the others one at
  // a time, alone on the machine, since they measure it.
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (int j = 0; j < options.jobs && !side_by_side.empty(); ++j)
    pool.emplace_back([&] {
      for (std::size_t n; (n = next++) < side_by_side.size();) runner.run(side_by_side[n]);
    });
  for (std::thread& t : pool) t.join();
  for (const Task& t : one_at_a_time) runner.run(t);
  return runner.finish();
}

}  // namespace fast::cli
