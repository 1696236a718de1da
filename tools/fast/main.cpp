// The `fast` command. Subcommands: train, compare, report, config-doc, launch, keygen, rendezvous.
// This executable does not link libtorch: it runs report, config-doc, launch, keygen and rendezvous
// itself, and for train and compare, once their command line parsed, replaces itself with the
// training helper (command_line.hpp). Exit codes (docs/errors.md): 0 success, 2 bad input or
// usage, 3 I/O or peer failure, 4 timeout, 5 other FAST error, 127 the helper cannot be started,
// 1 anything else.

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "command_line.hpp"
#include "config.hpp"
#include "fast/core/exit_code.hpp"
#include "fast/core/file_status.hpp"
#include "fast/core/version.hpp"
#include "fast/training/settings_check.hpp"
#if FAST_WITH_ZMQ
#include "keygen.hpp"
#include "launch.hpp"
#include "rendezvous_cmd.hpp"
#endif
#include "report.hpp"

#ifndef FAST_TRAIN_HELPER
#error "FAST_TRAIN_HELPER (the helper's path relative to this executable's folder) is set by tools/fast/CMakeLists.txt"
#endif

namespace {

namespace exit_code = fast::core::exit_code;

// The training helper: FAST_TRAIN_HELPER from the folder of this executable (links resolved), the
// same relation in the build tree (bin/ and libexec/fast/) as in an installation.
std::filesystem::path helper_path() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return (self.parent_path() / FAST_TRAIN_HELPER).lexically_normal();
}

// Replaces this process with the helper, same arguments; returns only when that failed.
// OpenBLAS, loaded with libtorch, starts a pool of one thread per core as it loads, and those
// threads spin (sched_yield) while the helper starts: on 2 cores about a fifth of the CPU of a
// short `fast train`. The helper sets OpenBLAS to one thread anyway (adapters/torch/threads.cpp),
// so it is started with OPENBLAS_NUM_THREADS=1 where the user has not set that variable.
int run_helper(char** argv) {
  const std::filesystem::path helper = helper_path();
  ::setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/0);
  std::fflush(stdout);
  std::fflush(stderr);
  ::execv(helper.c_str(), argv);
  std::fprintf(stderr,
               "fast: error: cannot start the training helper '%s' (%s); `fast %s` runs it, and an installation "
               "of FAST puts it there (reinstall, or run the fast of a complete build)\n",
               helper.c_str(), std::strerror(errno), argv[1] != nullptr ? argv[1] : "train");
  return exit_code::cannot_exec;
}

int run(int argc, char** argv) {
  CLI::App app;
  fast::cli::TrainingCommands training;
  fast::cli::add_training_commands(app, training);
  // "fast 0.1.0 (a866c49)": the version and, when built from a git checkout, the source commit.
  const std::string commit(fast::core::source_commit());
  app.set_version_flag(
      "--version",
      fmt::format("fast {}{}", fast::core::version(), commit.empty() ? std::string() : " (" + commit + ")"),
      "Print the version of FAST (and the source commit it was built from) and exit");
  CLI::App* rep = app.add_subcommand(
      "report",
      "Write a self-contained HTML page with the curves and table of a run or a comparison (docs/compare.md)");
  std::string report_dir, report_out;
  rep->add_option("dir", report_dir,
                  "A `fast compare` output folder, a run's folder with its metrics (*.jsonl), or a run's --metrics "
                  "path (NAME.jsonl; a run of several processes wrote NAME.rankR.jsonl, merged) or one of its files")
      ->required();
  rep->add_option("--out", report_out,
                  "The page to write (default: DIR/report.html; NAME.html beside a run's metrics file, NAME "
                  "without .rankR)");
  fast::cli::name_failures_after(rep);
  rep->footer(fast::cli::environment_help({"FAST_LOG_LEVEL"}));  // not the parent's: train's variables
  CLI::App* doc = app.add_subcommand("config-doc", "Print the settings table (markdown) used in docs/config.md");
  doc->footer("");
#if FAST_WITH_ZMQ  // launch, keygen and rendezvous serve the zmq runtime
  fast::cli::LaunchCommand launch_options;
  CLI::App* launch = fast::cli::add_launch_command(app, launch_options);
  fast::cli::KeygenCommand keygen_options;
  CLI::App* keygen = fast::cli::add_keygen_command(app, keygen_options);
  fast::runtime::ProcessOptions rendezvous_options;
  CLI::App* rendezvous = fast::cli::add_rendezvous_command(app, rendezvous_options);
  for (CLI::App* command : {launch, keygen, rendezvous}) fast::cli::name_failures_after(command);
#endif

  if (const auto code = fast::cli::parse_command_line(app, argc, argv)) return *code;
  // A mistake in the settings is refused here, before the helper loads libtorch (most of a second);
  // the helper checks them again with what needs libtorch (the device, the model). A config that
  // is not a regular file (a pipe, `<(...)`) can be read once only: the helper alone reads it.
  const auto& configs = training.train.config_paths;
  if (training.train.app->parsed() &&
      std::all_of(configs.begin(), configs.end(), [](const std::string& f) { return fast::core::readable_twice(f); }))
    fast::training::validate_settings(fast::cli::resolve_options(training.train, false));
  if (training.train.app->parsed() || training.compare.app->parsed()) return run_helper(argv);
#if FAST_WITH_ZMQ
  if (launch->parsed()) return fast::cli::run_launch(launch_options);
  if (keygen->parsed()) return fast::cli::run_keygen(keygen_options);
  if (rendezvous->parsed()) return fast::cli::run_rendezvous(rendezvous_options);
#endif
  if (rep->parsed()) {
    std::printf("report: %s (open it in a browser)\n",
                fast::cli::write_report(report_dir, report_out).string().c_str());
    return exit_code::ok;
  }
  if (doc->parsed()) {
    std::cout << fast::settings::config_markdown();
    return exit_code::ok;
  }
  return exit_code::bad_input;  // not reached: the parse requires one of the subcommands above
}

}  // namespace

int main(int argc, char** argv) { return fast::cli::run_with_exit_codes(run, argc, argv); }
