// The training helper of the `fast` command (LIBEXECDIR/fast/fast-train): `fast train` and `fast
// compare`, the subcommands that need libtorch. `fast` (main.cpp) parses the command line, then
// replaces itself with this program, same arguments and process id (command_line.hpp); the
// comparison's simulated runs start it again as `fast train` (train_in_child). Exit codes as
// `fast`'s (docs/errors.md).

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "command_line.hpp"
#include "compare.hpp"
#include "config.hpp"
#include "fast/adapters/torch/trainer.hpp"
#include "fast/core/counted.hpp"
#include "fast/core/error.hpp"
#include "fast/core/exit_code.hpp"
#include "fast/core/stop_request.hpp"
#include "fast/runtime/detect.hpp"
#include "fast/runtime/registry.hpp"
#include "progress.hpp"

namespace {

namespace exit_code = fast::core::exit_code;
using fast::cli::terminal_progress;

// Runs one `sim` run of `fast compare` as a child `fast train` process (this helper), because
// SimGrid supports one simulation per process: a second engine in the same process inherits the
// first one's clock and state and fails. The run's settings go to REP/config.toml (REP: the folder
// of its metrics and summary); the child's exit code becomes the matching exception (docs/errors.md).
nlohmann::json train_in_child(const fast::training::TrainOptions& run) {
  const std::filesystem::path rep = std::filesystem::path(run.summary).parent_path();
  const std::filesystem::path config = rep / "config.toml";
  {
    std::ofstream f(config);
    f << fast::cli::config_toml(run);
    FAST_ENFORCE_AS(fast::core::IoError, f.good(), "fast compare: cannot write '{}'", config.string());
  }
  std::vector<std::string> args = {"fast",  "train",     "--config",           config.string(), "--progress",
                                   "never", "--metrics", run.metrics.string(), "--summary",     run.summary.string()};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  FAST_ENFORCE_AS(fast::core::IoError, pid >= 0, "fast compare: fork failed for the run in '{}'", rep.string());
  if (pid == 0) {
    // The child's stdout (fast train's closing lines) would interleave with the table: send it to stderr.
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    ::execv("/proc/self/exe", argv.data());
    std::fprintf(stderr, "fast compare: cannot run /proc/self/exe for '%s'\n", rep.string().c_str());
    ::_exit(exit_code::cannot_exec);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    FAST_ENFORCE_AS(fast::core::IoError, errno == EINTR, "fast compare: waitpid failed for the run in '{}'",
                    rep.string());
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : exit_code::killed_by(WTERMSIG(status));
  exit_code::throw_unless_ok(code, fmt::format("the run in '{}' (fast train --config {}) exited with code {}",
                                               rep.string(), config.string(), code));
  std::ifstream in(run.summary);
  FAST_ENFORCE_AS(fast::core::IoError, in.good(), "fast compare: the run in '{}' wrote no summary '{}'", rep.string(),
                  run.summary.string());
  return nlohmann::json::parse(in);
}

int compare(const std::vector<std::string>& files, const fast::cli::CompareOptions& options,
            const std::vector<fast::cli::SettingOverride>& flags, const std::string& progress_mode) {
  // Every file, sweep and flag is checked before the first run starts.
  // Each run also as `fast train` would check it before reading data (the strategy's options for
  // its world size among them), so a mistake in the last run of a sweep is found before the first.
  const auto specs = fast::cli::plan_runs({files.begin(), files.end()}, flags, fast::torch::validate_options);
  std::fprintf(stderr, "fast compare: %zu configuration%s x %d repetition%s, output in %s\n", specs.size(),
               specs.size() == 1 ? "" : "s", options.repeat, options.repeat == 1 ? "" : "s",
               options.out.string().c_str());
  const bool terminal = terminal_progress(progress_mode);
  // SIGINT, SIGTERM: the run under way stops as fast train's does, no other starts, and the table
  // of what finished is written (docs/compare.md).
  fast::core::install_stop_handlers();
  const auto results = fast::cli::run_comparison(specs, options, [&](const fast::training::TrainOptions& run) {
    if (fast::runtime::find_runtime(run.runtime).simulated_clock) return train_in_child(run);
    // On a terminal the in-place line of `fast train`; elsewhere only compare's line per run.
    fast::cli::ProgressDisplay display(terminal, !terminal);
    return fast::torch::train(
        run, [&](const fast::training::Progress& p) { display.on_progress(p); },
        [&](const fast::training::EpochReport& e) {
          if (terminal) display.on_epoch(e);
        });
  });
  std::printf("%s", fast::cli::to_markdown(fast::cli::build_table(results)).c_str());
  // Where they are, on stderr with the runs' lines: stdout holds only the table.
  std::fprintf(stderr, "table: %s, %s\nreport: %s (open it in a browser)\n",
               (options.out / "compare.md").string().c_str(), (options.out / "compare.csv").string().c_str(),
               (options.out / "report.html").string().c_str());
  if (const int signal = fast::core::stop_requested()) {
    std::fprintf(stderr,
                 "fast compare: interrupted by %s: the table holds the configurations whose repetitions all "
                 "finished; the same command runs the others\n",
                 signal == SIGTERM ? "SIGTERM" : "SIGINT");
    return exit_code::killed_by(signal);
  }
  return exit_code::ok;
}

// "400 steps", or "77 of 400 steps" for a run that ended before its planned steps (interrupted,
// taken below --min-workers, stopped by stop_on_divergence): the steps worker 0 (or the first
// survivor) took.
std::string steps_taken(const nlohmann::json& summary) {
  const std::string planned = fast::core::counted(summary["steps"].get<long long>(), "step");
  for (const char* key : {"interrupted_at_step", "ended_at_step", "stopped_at_step"})
    if (summary.contains(key) && summary[key].is_number_integer())
      return fmt::format("{} of {}", summary[key].get<long long>(), planned);
  return planned;
}

// What an interrupted run's last line says of its checkpoint: how to resume it, or why it cannot
// be (docs/faults.md): a run that may grow resumes from none; the checkpoint of an elastic run
// interrupted after a loss holds the survivors' files only, and does not resume a run of the
// original size.
std::string resume_hint(const nlohmann::json& summary, const fast::training::TrainOptions& options) {
  if (summary["checkpoint"].is_null()) return "; no checkpoint written (see --checkpoint-dir)";
  const std::string folder = summary["checkpoint"].get<std::string>();
  if (summary.contains("vacant_workers"))
    return fmt::format("; checkpoint in {}, which a run that may grow (--max-workers) cannot resume from", folder);
  if (options.elastic && summary["live_workers"].get<int>() < summary["workers"].get<int>())
    return fmt::format(
        "; checkpoint in {}, written by the {} left after a loss, which resumes no run of {} (a resume needs every "
        "worker's file); --resume {} continues from the newest checkpoint that every worker wrote before the loss, "
        "where there is one (docs/faults.md, \"Elastic synchronous training\")",
        folder, fast::core::counted(summary["live_workers"].get<int>(), "worker"),
        fast::core::counted(summary["workers"].get<int>(), "worker"), options.checkpoint_dir.string());
  return "; resume with --resume " + options.checkpoint_dir.string();
}

// fast train's closing lines on stdout: the final accuracy and where the summary went (by the
// process of worker 0, or of the first survivor, only: the one that wrote the summary, so that a
// run of several processes reports one final line), divergence, the simulated time, this process's
// metrics file, an interruption. Returns the exit code (an interrupted run: as
// killed by its signal; a final checkpoint that could not be written: 3; an elastic run that a loss
// took below --min-workers: 6).
int report_outcome(const nlohmann::json& summary, const fast::training::TrainOptions& options, double wall_seconds,
                   const fast::torch::ProcessReport& process) {
  const bool reports_run = process.hosts_worker_zero;
  if (reports_run) {
    // "(1 lost)", "(1 vacant)", "(1 lost, 1 vacant)" or nothing.
    std::vector<std::string> missing;
    for (const char* key : {"lost_workers", "vacant_workers"}) {
      const std::size_t n = summary.value(key, nlohmann::json::array()).size();
      if (n > 0)
        missing.push_back(fmt::format("{} {}", n, std::string_view(key).substr(0, std::string_view(key).find('_'))));
    }
    const std::string aside = missing.empty() ? "" : fmt::format(" ({})", fmt::join(missing, ", "));
    std::printf("final test accuracy: %.4f (%s, %s%s, %s, %.1f s, %.0f samples/s)\n",
                summary["final_accuracy"].get<double>(), options.worker.strategy.name.c_str(),
                fast::core::counted(summary["workers"].get<int>(), "worker").c_str(), aside.c_str(),
                steps_taken(summary).c_str(), summary["wall_seconds"].get<double>(),
                summary["samples_per_second"].get<double>());
  }
  if (summary.value("diverged", false))
    std::printf("DIVERGED: %s%s\n", summary["divergence"].get<std::string>().c_str(),
                summary.value("stopped_early", false) ? " (stopped early: stop_on_divergence)" : "");
  if (summary.contains("simulated_seconds")) {
    // The only wall-clock figure of a sim run: printed, never written to the metrics or summary.
    std::printf("simulated: %.3f s on %s; wall time of the simulation: %.1f s\n",
                summary["simulated_seconds"].get<double>(),
                options.cluster.empty() ? "the default cluster" : options.cluster.c_str(), wall_seconds);
  }
  std::printf("metrics: %s\n",
              options.metrics.empty()        ? "(none: set --metrics FILE)"
              : process.metrics_file.empty() ? options.metrics.c_str()  // the run ended before it opened one
                                             : process.metrics_file.string().c_str());
  // One summary per run, written by the reporting process: the others name only their metrics file.
  if (reports_run)
    std::printf("summary: %s\n", options.summary.empty() ? "(none: set --summary FILE)" : options.summary.c_str());
  // The final checkpoint could not be written: the run is evaluated and summarised, and exits with 3.
  const bool checkpoint_lost = summary.contains("checkpoint_error") && summary["checkpoint_error"].is_string();
  if (checkpoint_lost)
    std::fprintf(stderr,
                 "fast train: the final checkpoint was NOT written (%s); the final evaluation and the summary were "
                 "(checkpoint_error in the summary)\n",
                 summary["checkpoint_error"].get<std::string>().c_str());
  if (summary.value("below_min_workers", false)) {
    std::printf("elastic: %s left, below --min-workers %d: the run ended at step %lld of %lld%s\n",
                fast::core::counted(summary["live_workers"].get<int>(), "worker").c_str(),
                summary["min_workers"].get<int>(), summary["ended_at_step"].get<long long>(),
                summary["steps"].get<long long>(), resume_hint(summary, options).c_str());
    return exit_code::below_min_workers;
  }
  if (!summary.value("interrupted", false)) return checkpoint_lost ? exit_code::io_or_peer_lost : exit_code::ok;
  const std::string by = summary["interrupted_by"].get<std::string>();
  std::printf("interrupted by %s at step %lld of %lld%s\n", by.c_str(), summary["interrupted_at_step"].get<long long>(),
              summary["steps"].get<long long>(), resume_hint(summary, options).c_str());
  return exit_code::killed_by(by == "SIGTERM" ? SIGTERM : SIGINT);
}

int train(const fast::cli::TrainCommand& command) {
  const fast::training::TrainOptions options = fast::cli::resolve_options(command, true);
  // What needs libtorch (the model, the device) is checked before the run's line below, so that a
  // refused run prints its error alone (torch::train checks again: it is the library's entry too).
  fast::torch::validate_options(options);
  const bool terminal = terminal_progress(command.progress);
  fast::cli::ProgressDisplay display(terminal, command.progress == "never");
  // Where the world is made of processes (zmq, mpi), it is known once they met: this process's share
  // is what it knows now.
  const bool processes = fast::runtime::find_runtime(options.runtime).multi_process;
  const std::string workers = processes
                                  ? fast::core::counted(options.process.workers_per_process, "worker") + " per process"
                                  : fast::core::counted(options.workers, "worker");
  const std::string device = options.device == "cpu" ? std::string() : " on " + options.device;
  const fast::strategy::StrategyOptions& so = options.worker.strategy;
  const std::string codec = (so.compress == "none" ? std::string() : ", compress " + so.compress) +
                            (so.dgc ? std::string(" with dgc") : std::string());
  std::fprintf(stderr, "fast train: %s, %s (%s%s), model %s, batch %lld per worker, optimizer %s lr %g%s\n",
               so.name.c_str(), workers.c_str(), options.runtime.c_str(), device.c_str(), options.model.c_str(),
               static_cast<long long>(options.batch), options.worker.optimizer.name.c_str(),
               options.worker.optimizer.lr, codec.c_str());
  const auto wall_start = std::chrono::steady_clock::now();
  // SIGINT/SIGTERM: finish the step, write a checkpoint and a summary marked interrupted (a second
  // signal ends the process at once). Under a simulated clock the signal ends the process at once
  // (docs/faults.md): an agreement on the step would add messages to the simulated run.
  if (!fast::runtime::find_runtime(options.runtime).simulated_clock) fast::core::install_stop_handlers();
  fast::torch::ProcessReport process;
  const nlohmann::json summary = fast::torch::train(
      options, [&](const fast::training::Progress& p) { display.on_progress(p); },
      [&](const fast::training::EpochReport& e) { display.on_epoch(e); }, &process);
  return report_outcome(summary, options,
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count(), process);
}

int run(int argc, char** argv) {
  CLI::App app;
  fast::cli::TrainingCommands commands;
  fast::cli::add_training_commands(app, commands);
  if (const auto code = fast::cli::parse_command_line(app, argc, argv)) return *code;
  fast::cli::CompareCommand& c = commands.compare;
  if (c.app->parsed()) {
    c.options.out = c.out;
    return compare(c.files, c.options, fast::cli::given_flags(c.app, c.values), c.progress);
  }
  return train(commands.train);
}

}  // namespace

int main(int argc, char** argv) { return fast::cli::run_with_exit_codes(run, argc, argv); }
