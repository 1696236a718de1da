#pragma once
// The command line of `fast`, shared by the command's two executables:
//   - `fast` (main.cpp): every subcommand; it does not link libtorch, so `fast --help`, `fast
//     launch`, `keygen`, `rendezvous`, `report` and `config-doc` start without loading it (Debian's
//     libtorch's static initialisation costs most of a second of CPU at every start);
//   - its training helper, LIBEXECDIR/fast/fast-train (train_main.cpp): `train` and `compare`,
//     which need libtorch. `fast` parses the whole command line first (so `fast train --help` and
//     a wrong flag need no libtorch either), checks `train`'s settings that need no libtorch
//     (training/settings_check.hpp), then replaces itself with the helper (execv, same process
//     id, same arguments), which parses and checks them again with the same definitions.
// Thread-safety: none needed (used by main() before any thread starts).

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "compare.hpp"
#include "config.hpp"

namespace fast::cli {

// `fast train`: --config FILE, --progress MODE and one flag per setting (config_keys()).
struct TrainCommand {
  CLI::App* app = nullptr;  // owned by the CLI::App it was added to
  std::vector<std::string> config_paths;  // --config, in the order given: applied in turn
  std::string progress = "auto";
  std::vector<std::string> values;  // values[i]: the flag of config_keys()[i], when given
};

// `fast compare FILES...`: --out, --repeat, --jobs, --progress and the setting flags.
struct CompareCommand {
  CLI::App* app = nullptr;
  std::vector<std::string> files;
  CompareOptions options;
  std::string out = CompareOptions{}.out.string();
  std::string progress = "auto";
  std::vector<std::string> values;
};

// The subcommands that `fast` hands to the helper.
struct TrainingCommands {
  TrainCommand train;
  CompareCommand compare;
};

// Describes `app` (description, footer with the environment variables and exit codes, one
// subcommand required) and adds train and compare, binding their flags to `commands`' fields
// (which must outlive the parse: keep `commands` where it is). Both executables start from this,
// so they parse alike.
void add_training_commands(CLI::App& app, TrainingCommands& commands);

// The setting flags given on the command line of `command`, in settings-table order.
std::vector<SettingOverride> given_flags(const CLI::App* command, const std::vector<std::string>& values);
// Whether the progress line is drawn in place: "always", or "auto" with stderr a terminal.
bool terminal_progress(const std::string& mode);

// The settings of `command` (its config file, then its flags), then the world from the launcher that
// started this process (runtime/detect.hpp): the runtime and the process options the user left
// open. With `announce`, prints the line that says what was detected and its warnings (the helper
// does; `fast` resolves them silently to check them before it starts the helper).
// InvalidArgument for a bad setting or a contradiction.
training::TrainOptions resolve_options(const TrainCommand& command, bool announce);

// Parses argv into `app`. Returns the exit code the process ends with when the parse ends it (help
// printed: ok; a usage error printed: bad_input), or nothing when the subcommand should run.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv);

// Runs body(argc, argv) and returns its exit code; FAST's exceptions become the exit codes and
// messages of docs/errors.md ("fast: error: ...", 2 bad input, 3 I/O or peer, 4 timeout, 5 other
// FAST error, 1 anything else). Exceptions become exit codes here and only here.
int run_with_exit_codes(int (*body)(int, char**), int argc, char** argv);
// The command the failure message of run_with_exit_codes and of a command-line mistake names
// ("fast launch: error: ..."; default "fast"): a subcommand whose failures are its own work's, not a
// training run's. Called on the main thread.
void name_failures_after(std::string command);
// The same for `subcommand` of `fast`, set as the parser reaches it ("fast " + its name), so that
// a mistake in its own options is named after it too.
void name_failures_after(CLI::App* subcommand);

// The "Environment:" section of a command's --help: each variable FAST reads with its description
// and default, or only those named in `only` (the ones the command reads).
std::string environment_help(std::initializer_list<std::string_view> only = {});

}  // namespace fast::cli
