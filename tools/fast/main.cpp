// The `fast` command. Subcommands: train, compare, report, config-doc, launch, keygen, rendezvous. Exceptions become exit codes here and only
// here (docs/errors.md): 0 success, 2 bad input or usage, 3 I/O or peer failure, 4 timeout,
// 5 other FAST error, 1 anything else.

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "compare.hpp"
#include "config.hpp"
#include "fast/adapters/torch/trainer.hpp"
#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/core/exit_code.hpp"
#include "fast/core/stop_request.hpp"
#if FAST_WITH_ZMQ
#include "keygen.hpp"
#include "launch.hpp"
#include "rendezvous_cmd.hpp"
#endif
#include "progress.hpp"
#include "report.hpp"

namespace {

namespace exit_code = fast::core::exit_code;

std::string environment_help() {
  std::string text = "\nEnvironment:\n";
  for (const auto& v : fast::core::env_table())
    text += fmt::format("  {:<24} {} (default: {})\n", v.name, v.description, v.default_value);
  return text;
}

// --no-KEY: the flag that sets a boolean setting to false.
std::string negated_flag_name(std::string_view key) { return "--no-" + fast::cli::flag_name(key).substr(2); }

// One --key VALUE option per setting, written into values[i] (config_keys()[i]).
void add_setting_flags(CLI::App* command, std::vector<std::string>& values) {
  const fast::torch::TrainOptions defaults;
  values.resize(fast::cli::config_keys().size());
  for (std::size_t i = 0; i < fast::cli::config_keys().size(); ++i) {
    const auto& key = fast::cli::config_keys()[i];
    const std::string help = fmt::format("{} [{}, default {}]", key.description, fast::cli::key_type_name(key.type),
                                         key.get(defaults).empty() ? "none" : key.get(defaults));
    if (key.type == fast::cli::KeyType::boolean)  // a flag; --no-KEY too where it defaults to true (given_flags)
      command->add_flag(fast::cli::flag_name(key.name) +
                            (key.get(defaults) == "true" ? ",!" + negated_flag_name(key.name) : std::string()), help);
    else
      command->add_option(fast::cli::flag_name(key.name), values[i], help);
  }
}

// The setting flags given on the command line, in settings-table order.
std::vector<fast::cli::SettingOverride> given_flags(const CLI::App* command, const std::vector<std::string>& values) {
  std::vector<fast::cli::SettingOverride> given;
  for (std::size_t i = 0; i < fast::cli::config_keys().size(); ++i) {
    const auto& key = fast::cli::config_keys()[i];
    const std::string flag = fast::cli::flag_name(key.name);
    if (key.type == fast::cli::KeyType::boolean) {
      // A flag and, for the booleans that default to true, its --no- form (the last one given wins).
      const CLI::Option* option = command->get_option(flag);
      if (option->count() == 0) continue;
      const bool on = option->as<bool>();
      given.push_back({std::string(key.name), on ? "true" : "false", on ? flag : negated_flag_name(key.name)});
      continue;
    }
    if (command->count(flag) == 0) continue;
    given.push_back({std::string(key.name), values[i], flag});
  }
  return given;
}

bool terminal_progress(const std::string& mode) {
  return mode == "always" || (mode == "auto" && ::isatty(STDERR_FILENO));
}

// Runs one `sim` run of `fast compare` as a child `fast train` process (this executable), because
// SimGrid supports one simulation per process: a second engine in the same process inherits the
// first one's clock and state and fails. The run's settings go to REP/config.toml (REP: the folder
// of its metrics and summary); the child's exit code becomes the matching exception (docs/errors.md).
nlohmann::json train_in_child(const fast::torch::TrainOptions& run) {
  const std::filesystem::path rep = std::filesystem::path(run.summary).parent_path();
  const std::filesystem::path config = rep / "config.toml";
  {
    std::ofstream f(config);
    f << fast::cli::config_toml(run);
    FAST_ENFORCE_AS(fast::core::IoError, f.good(), "fast compare: cannot write '{}'", config.string());
  }
  std::vector<std::string> args = {"fast",      "train",     "--config", config.string(),   "--progress",
                                   "never",     "--metrics", run.metrics.string(), "--summary", run.summary.string()};
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
  std::fprintf(stderr, "fast compare: %zu configurations x %d repetitions, output in %s\n", specs.size(),
               options.repeat, options.out.string().c_str());
  const bool terminal = terminal_progress(progress_mode);
  const auto results = fast::cli::run_comparison(specs, options, [&](const fast::torch::TrainOptions& run) {
    if (run.runtime == "sim") return train_in_child(run);
    // On a terminal the in-place line of `fast train`; elsewhere only compare's line per run.
    fast::cli::ProgressDisplay display(terminal, !terminal);
    return fast::torch::train(
        run, [&](const fast::torch::Progress& p) { display.on_progress(p); },
        [&](const fast::torch::EpochReport& e) {
          if (terminal) display.on_epoch(e);
        });
  });
  std::printf("%s", fast::cli::to_markdown(fast::cli::build_table(results)).c_str());
  std::printf("table: %s, %s\nreport: %s (open it in a browser)\n", (options.out / "compare.md").string().c_str(),
              (options.out / "compare.csv").string().c_str(), (options.out / "report.html").string().c_str());
  return exit_code::ok;
}

int run(int argc, char** argv) {
  CLI::App app{"FAST: flexible (a)synchronous scalable training of neural networks across workers"};
  app.footer(environment_help() + "\nExit codes: 0 ok, 2 bad input, 3 I/O or peer failure, 4 timeout, 5 other error.");
  app.require_subcommand(1);

  CLI::App* train = app.add_subcommand("train", "Train a model with a coordination strategy across workers");
  train->footer(environment_help());
  std::string config_path;
  std::string progress_mode = "auto";
  train->add_option("--config", config_path, "TOML config file (keys as below; flags override it)");
  train->add_option("--progress", progress_mode, "Live progress line: auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  std::vector<std::string> values;
  add_setting_flags(train, values);

  CLI::App* cmp = app.add_subcommand(
      "compare", "Run several configurations (config files, sweep files) and tabulate them (docs/compare.md)");
  cmp->footer("Setting flags apply to every run (a key that a sweep varies may not be given)." +
              environment_help());
  std::vector<std::string> compare_files;
  fast::cli::CompareOptions compare_options;
  std::string compare_out = compare_options.out.string();
  std::string compare_progress = "auto";
  cmp->add_option("files", compare_files, "Config files (one run each) and sweep files ([sweep], [[run]])")
      ->required();
  cmp->add_option("--out", compare_out, "Output folder: per-run metrics and summaries, compare.md, compare.csv")
      ->capture_default_str();
  cmp->add_option("--repeat", compare_options.repeat,
                  "Runs per configuration (seeds seed, seed+1, ...); the table shows medians")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmp->add_option("--jobs", compare_options.jobs,
                  "Simulated runs (runtime sim) to run side by side; other runs go one at a time, after them")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmp->add_option("--progress", compare_progress, "Live progress line of each run: auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  std::vector<std::string> compare_values;
  add_setting_flags(cmp, compare_values);

  CLI::App* rep = app.add_subcommand(
      "report", "Write a self-contained HTML page with the curves and table of a run or a comparison (docs/compare.md)");
  std::string report_dir, report_out;
  rep->add_option("dir", report_dir,
                  "A `fast compare` output folder, a run's folder with its metrics (*.jsonl), or a metrics file")
      ->required();
  rep->add_option("--out", report_out, "The page to write (default: DIR/report.html; FILE.html beside a metrics file)");

  CLI::App* doc = app.add_subcommand("config-doc", "Print the settings table (markdown) used in docs/config.md");
#if FAST_WITH_ZMQ  // launch, keygen and rendezvous serve the zmq runtime
  fast::cli::LaunchCommand launch_options;
  CLI::App* launch = fast::cli::add_launch_command(app, launch_options);
  fast::cli::KeygenCommand keygen_options;
  CLI::App* keygen = fast::cli::add_keygen_command(app, keygen_options);
  fast::runtime::ProcessOptions rendezvous_options;
  CLI::App* rendezvous = fast::cli::add_rendezvous_command(app, rendezvous_options);
#endif

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? exit_code::ok : exit_code::bad_input;
  }

#if FAST_WITH_ZMQ
  if (launch->parsed()) return fast::cli::run_launch(launch_options);
  if (keygen->parsed()) return fast::cli::run_keygen(keygen_options);
  if (rendezvous->parsed()) return fast::cli::run_rendezvous(rendezvous_options);
#endif

  if (rep->parsed()) {
    std::printf("report: %s (open it in a browser)\n", fast::cli::write_report(report_dir, report_out).string().c_str());
    return exit_code::ok;
  }
  if (doc->parsed()) {
    std::cout << fast::cli::config_markdown();
    return exit_code::ok;
  }

  if (cmp->parsed()) {
    compare_options.out = compare_out;
    return compare(compare_files, compare_options, given_flags(cmp, compare_values), compare_progress);
  }

  fast::torch::TrainOptions options;
  if (!config_path.empty()) fast::cli::apply_config_file(options, config_path);
  for (const auto& flag : given_flags(train, values)) fast::cli::apply_setting(options, flag.key, flag.value, flag.origin);
  const bool terminal = terminal_progress(progress_mode);
  fast::cli::ProgressDisplay display(terminal, progress_mode == "never");
  // Under zmq and mpi the world is known once the processes met: this process's share is what it knows now.
  const std::string workers = options.runtime == "zmq"   ? fmt::format("{} workers per process", options.process.workers_per_process)
                              : options.runtime == "mpi" ? std::string("1 worker per rank")
                                                         : fmt::format("{} workers", options.workers);
  const std::string device = options.device == "cpu" ? std::string() : " on " + options.device;
  std::fprintf(stderr, "fast train: %s, %s (%s%s), model %s, batch %lld per worker, optimizer %s lr %g\n",
               options.worker.strategy.name.c_str(), workers.c_str(), options.runtime.c_str(), device.c_str(),
               options.model.c_str(), static_cast<long long>(options.batch), options.worker.optimizer.name.c_str(),
               options.worker.optimizer.lr);
  const auto wall_start = std::chrono::steady_clock::now();
  // SIGINT/SIGTERM: finish the step, write a checkpoint and a summary marked interrupted (a second
  // signal ends the process at once).
  fast::core::install_stop_handlers();
  const nlohmann::json summary = fast::torch::train(
      options, [&](const fast::torch::Progress& p) { display.on_progress(p); },
      [&](const fast::torch::EpochReport& e) { display.on_epoch(e); });
  std::printf("final test accuracy: %.4f (%s, %d workers, %lld steps, %.1f s, %.0f samples/s)\n",
              summary["final_accuracy"].get<double>(), options.worker.strategy.name.c_str(),
              summary["workers"].get<int>(), summary["steps"].get<long long>(), summary["wall_seconds"].get<double>(),
              summary["samples_per_second"].get<double>());
  if (summary.value("diverged", false))
    std::printf("DIVERGED: %s%s\n", summary["divergence"].get<std::string>().c_str(),
                summary.value("stopped_early", false) ? " (stopped early: stop_on_divergence)" : "");
  if (summary.contains("simulated_seconds")) {
    // The only wall-clock figure of a sim run: printed, never written to the metrics or summary.
    std::printf("simulated: %.3f s on %s; wall time of the simulation: %.1f s\n",
                summary["simulated_seconds"].get<double>(),
                options.cluster.empty() ? "the default cluster" : options.cluster.c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count());
  }
  std::printf("metrics: %s\n", options.metrics.empty() ? "(none: set --metrics FILE)" : options.metrics.c_str());
  std::printf("summary: %s%s\n", options.summary.empty() ? "(none: set --summary FILE)" : options.summary.c_str(),
              (options.runtime == "zmq" || options.runtime == "mpi") && !options.summary.empty()
                  ? " (written by the process of worker 0)"
                  : "");
  if (summary.value("interrupted", false)) {
    const std::string by = summary["interrupted_by"].get<std::string>();
    std::printf("interrupted by %s at step %lld of %lld%s%s\n", by.c_str(),
                summary["interrupted_at_step"].get<long long>(), summary["steps"].get<long long>(),
                summary["checkpoint"].is_null() ? "; no checkpoint written (see --checkpoint-dir)"
                                                : "; resume with --resume ",
                summary["checkpoint"].is_null() ? "" : options.checkpoint_dir.c_str());
    return exit_code::killed_by(by == "SIGTERM" ? SIGTERM : SIGINT);
  }
  return exit_code::ok;
}

std::string shown(const std::exception& e) { return fast::core::user_message(e); }

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const fast::InvalidArgument& e) {
    std::fprintf(stderr, "fast: error: %s\n", shown(e).c_str());
    return exit_code::bad_input;
  } catch (const fast::InvalidUsage& e) {
    std::fprintf(stderr, "fast: error: %s\n", shown(e).c_str());
    return exit_code::bad_input;
  } catch (const fast::IoError& e) {
    std::fprintf(stderr, "fast: I/O error: %s\n", shown(e).c_str());
    return exit_code::io_or_peer_lost;
  } catch (const fast::PeerLost& e) {
    std::fprintf(stderr, "fast: peer lost: %s\n", shown(e).c_str());
    return exit_code::io_or_peer_lost;
  } catch (const fast::TimeoutError& e) {
    std::fprintf(stderr, "fast: timeout: %s\n", shown(e).c_str());
    return exit_code::timeout;
  } catch (const fast::Error& e) {
    std::fprintf(stderr, "fast: error: %s\n", shown(e).c_str());
    return exit_code::failed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fast: unexpected error: %s\n", shown(e).c_str());
    return exit_code::unexpected;
  }
}
