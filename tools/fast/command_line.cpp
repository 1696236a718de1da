#include "command_line.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/core/exit_code.hpp"
#include "fast/core/suggest.hpp"
#include "fast/runtime/detect.hpp"

namespace fast::cli {

namespace {

namespace exit_code = core::exit_code;

}  // namespace

std::string environment_help(std::initializer_list<std::string_view> only) {
  std::string text = "\nEnvironment:\n";
  for (const core::EnvTable table : settings::environment_tables())
    for (const auto& v : table)
      if (only.size() == 0 || std::find(only.begin(), only.end(), v.name) != only.end())
        text += fmt::format("  {:<24} {} (default: {})\n", v.name, v.description, v.default_value);
  return text;
}

namespace {

// --no-KEY: the flag that sets a boolean setting to false.
std::string negated_flag_name(std::string_view key) { return "--no-" + settings::flag_name(key).substr(2); }

// How --help shows the value a setting's flag takes.
const char* value_name(settings::KeyType type) {
  switch (type) {
    case settings::KeyType::integer: return "INT";
    case settings::KeyType::number: return "NUMBER";
    case settings::KeyType::path: return "PATH";
    default: return "TEXT";
  }
}

// One --key VALUE option per setting, written into values[i] (config_keys()[i]).
void add_setting_flags(CLI::App* command, std::vector<std::string>& values) {
  const training::TrainOptions defaults;
  values.resize(settings::config_keys().size());
  for (std::size_t i = 0; i < settings::config_keys().size(); ++i) {
    const auto& key = settings::config_keys()[i];
    const std::string help = fmt::format("{} [{}, default {}]", key.description, settings::key_type_name(key.type),
                                         key.get(defaults).empty() ? "none" : key.get(defaults));
    if (key.type == settings::KeyType::boolean)  // a flag; --no-KEY too where it defaults to true (given_flags)
      command->add_flag(settings::flag_name(key.name) +
                            (key.get(defaults) == "true" ? ",!" + negated_flag_name(key.name) : std::string()),
                        help);
    else
      command->add_option(settings::flag_name(key.name), values[i], help)->type_name(value_name(key.type));
  }
}

void describe_app(CLI::App& app) {
  // An option given twice takes its last value, as a boolean flag does ("$COMMON --lr 0.1"
  // overrides a --lr in $COMMON); CLI11's default refuses it. Subcommands added after inherit it.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.name("fast");  // not argv[0]: --help shows the command, not the path it was started by
  app.description("FAST: flexible (a)synchronous scalable training of neural networks across workers");
  app.footer(
      environment_help() +
      "\nExit codes (docs/errors.md): 0 ok, 1 unexpected error, 2 bad input, 3 I/O or peer failure, 4 timeout, 5 "
      "other error, 6 an elastic run below --min-workers, 124 fast launch --timeout, 127 a program that "
      "cannot be started, 128 + N killed or interrupted by signal N (130: SIGINT, 143: SIGTERM).");
  app.require_subcommand(1);
}

void add_train_command(CLI::App& app, TrainCommand& c) {
  c.app = app.add_subcommand("train", "Train a model with a coordination strategy across workers");
  c.app->footer(environment_help());
  c.app
      ->add_option("--config", c.config_paths,
                   "TOML config file (keys as below; flags override it); given several times, the files apply in "
                   "order, a later file's key overriding an earlier one's")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  c.app->add_option("--progress", c.progress, "Live progress line: auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  add_setting_flags(c.app, c.values);
}

void add_compare_command(CLI::App& app, CompareCommand& c) {
  c.app = app.add_subcommand(
      "compare", "Run several configurations (config files, sweep files) and tabulate them (docs/compare.md)");
  c.app->footer("Setting flags apply to every run (a key that a sweep varies may not be given)." + environment_help());
  name_failures_after(c.app);
  c.app->add_option("files", c.files, "Config files (one run each) and sweep files ([sweep], [[run]])")->required();
  c.app
      ->add_option("--out", c.out, "Output folder: per-run metrics and summaries, compare.md, compare.csv, report.html")
      ->capture_default_str();
  c.app
      ->add_option("--repeat", c.options.repeat,
                   "Runs per configuration (seeds seed, seed+1, ...); the table shows medians")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  c.app
      ->add_option("--jobs", c.options.jobs,
                   "Simulated runs (runtime sim) to run side by side; other runs go one at a time, after them")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  c.app->add_option("--progress", c.progress, "Live progress line of each run: auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  add_setting_flags(c.app, c.values);
}

}  // namespace

void add_training_commands(CLI::App& app, TrainingCommands& commands) {
  describe_app(app);
  add_train_command(app, commands.train);
  add_compare_command(app, commands.compare);
}

std::vector<SettingOverride> given_flags(const CLI::App* command, const std::vector<std::string>& values) {
  std::vector<SettingOverride> given;
  for (std::size_t i = 0; i < settings::config_keys().size(); ++i) {
    const auto& key = settings::config_keys()[i];
    const std::string flag = settings::flag_name(key.name);
    if (key.type == settings::KeyType::boolean) {
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

namespace {

// In place of CLI11's "The following arguments were not expected" when some of them are flags
// the command does not have: each such flag with the nearest option of the command it was given
// to (core/suggest.hpp), "--stratgy: not an option of train (did you mean --strategy?)". The
// words after them (their values, a launched command) are left out: the flag explains them.
// `options`: the command line's words before its first "--", each up to its '=' (after "--", the
// options are a launched command's, which the parser hands back among the extras once it failed).
std::optional<std::string> unknown_options(const CLI::App& app, const std::vector<std::string>& options) {
  const std::vector<CLI::App*> parsed = app.get_subcommands();
  const CLI::App& command = parsed.empty() ? app : *parsed.back();
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options())
    for (const std::string& name : option->get_lnames()) names.push_back(name);
  std::vector<std::string> items;
  for (const std::string& extra : app.remaining(true)) {
    const std::string flag = extra.substr(0, extra.find('='));  // up to '=', or all
    if (flag.size() < 2 || flag.front() != '-' || std::find(options.begin(), options.end(), flag) == options.end())
      continue;
    const bool long_flag = flag.compare(0, 2, "--") == 0;
    const std::optional<std::string> nearest =
        long_flag && flag.size() > 2 ? core::nearest_name(flag.substr(2), names) : std::nullopt;
    items.push_back(fmt::format("{}: not an option of {}{}", flag, command.get_name(),
                                nearest ? " (did you mean --" + *nearest + "?)" : std::string()));
  }
  if (items.empty()) return std::nullopt;
  return fmt::format("{}", fmt::join(items, "; "));
}

// In place of CLI11's "A subcommand is required" when a word was given where the command goes
// (`fast trian`): that it is not a command, the nearest command, and the commands there are.
std::optional<std::string> not_a_command(const CLI::App& app) {
  if (!app.get_subcommands().empty()) return std::nullopt;
  const std::vector<std::string> extras = app.remaining(true);
  if (extras.empty() || extras.front().empty() || extras.front().front() == '-') return std::nullopt;
  std::vector<std::string> names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(command->get_name());
  const std::optional<std::string> nearest = core::nearest_name(extras.front(), names);
  return fmt::format("{}: not a command of fast{}; the commands: {} (fast COMMAND --help)", extras.front(),
                     nearest ? " (did you mean " + *nearest + "?)" : std::string(), fmt::join(names, ", "));
}

// The parser's message, with the arguments it did not expect in command-line order (CLI11 lists
// them last first: "adpsgd --stratgy").
std::string parse_error_text(const CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& options) {
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr)
    if (std::optional<std::string> text = not_a_command(app)) return *text;
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    if (std::optional<std::string> text = unknown_options(app, options)) return *text;
    const std::vector<std::string> extras = app.remaining(true);
    if (!extras.empty())
      return fmt::format("The following argument{} not expected: {}", extras.size() == 1 ? " was" : "s were",
                         fmt::join(extras, " "));
  }
  // CLI11's "Could not convert: --timeout = abc" as FAST's other value errors read: the option,
  // what it expects (its declared type), and the value given.
  const std::string text = e.what();
  const std::string prefix = "Could not convert: ";
  const std::size_t equals = text.find(" = ");
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr && text.starts_with(prefix) &&
      equals != std::string::npos) {
    const std::string name = text.substr(prefix.size(), equals - prefix.size());
    const std::vector<CLI::App*> parsed = app.get_subcommands();
    const CLI::Option* option = parsed.empty() ? nullptr : parsed.back()->get_option_no_throw(name);
    if (option == nullptr) option = app.get_option_no_throw(name);
    std::string type = option != nullptr ? option->get_type_name() : "";
    type = type.substr(0, type.find(':'));  // a validator's text follows the type ("INT:...")
    const std::string expected = type == "FLOAT"                   ? "a number"
                                 : type == "INT" || type == "UINT" ? "an integer"
                                                                   : "a valid value";
    return fmt::format("{}: expected {}, got '{}'", name, expected, text.substr(equals + 3));
  }
  return text;
}

}  // namespace

namespace {
std::string failing_command = "fast";  // name_failures_after(); read once the parse or the body has ended
}  // namespace

void name_failures_after(std::string command) { failing_command = std::move(command); }

void name_failures_after(CLI::App* subcommand) {
  subcommand->preparse_callback([subcommand](std::size_t) { name_failures_after("fast " + subcommand->get_name()); });
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e) == 0 ? exit_code::ok : exit_code::bad_input;  // --help, --version
    // "fast launch: error: <the parser's message>", as the command's other failures read.
    std::vector<std::string> options;
    for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i) {
      const std::string_view word = argv[i];
      options.emplace_back(word.substr(0, word.find('=')));
    }
    const std::vector<CLI::App*> parsed = app.get_subcommands();
    std::fprintf(stderr, "%s: error: %s\nRun `fast%s --help` for the options.\n", failing_command.c_str(),
                 parse_error_text(app, e, options).c_str(),
                 parsed.empty() ? "" : (" " + parsed.back()->get_name()).c_str());
    return exit_code::bad_input;
  }
  return std::nullopt;
}

int run_with_exit_codes(int (*body)(int, char**), int argc, char** argv) {
  // The message "<command>: <kind>: <what>" on stderr (<command>: name_failures_after()'s, "fast"
  // by default; a message that starts with it does not repeat it), and the exit code of that kind.
  const auto fail = [](const char* kind, const std::exception& e, int code) {
    const std::string message = core::user_message(e);
    std::string_view what = message;
    if (what.starts_with(failing_command + ": ")) what.remove_prefix(failing_command.size() + 2);
    std::fprintf(stderr, "%s: %s: %.*s\n", failing_command.c_str(), kind, static_cast<int>(what.size()), what.data());
    return code;
  };
  try {
    return body(argc, argv);
  } catch (const core::NotAdmitted& e) {  // not a failure: the run ended or stopped before it joined
    std::fprintf(stderr, "fast: %s\n", core::user_message(e).c_str());
    return e.exit_status();
  } catch (const InvalidArgument& e) {
    return fail("error", e, exit_code::bad_input);
  } catch (const InvalidUsage& e) {
    return fail("error", e, exit_code::bad_input);
  } catch (const IoError& e) {
    return fail(exit_code::io_error_kind, e, exit_code::io_or_peer_lost);
  } catch (const PeerLost& e) {
    return fail(exit_code::peer_lost_kind, e, exit_code::io_or_peer_lost);
  } catch (const TimeoutError& e) {
    return fail("timeout", e, exit_code::timeout);
  } catch (const Error& e) {
    return fail("error", e, exit_code::failed);
  } catch (const std::exception& e) {
    return fail("unexpected error", e, exit_code::unexpected);
  }
}

training::TrainOptions resolve_options(const TrainCommand& command, bool announce) {
  const training::TrainOptions defaults;
  training::TrainOptions options;
  options.runtime.clear();  // unset: the launcher decides
  options.workers = 0;      // unset: the default (threads, sim), or the launcher's processes
  std::vector<std::string> given;  // the keys set by the file and the flags
  for (const std::string& file : command.config_paths) {
    const std::vector<std::string> keys = settings::apply_config_file(options, file);
    given.insert(given.end(), keys.begin(), keys.end());
  }
  bool workers_flag = false;
  for (const auto& flag : cli::given_flags(command.app, command.values)) {
    settings::apply_setting(options, flag.key, flag.value, flag.origin);
    workers_flag = workers_flag || flag.key == "workers";
    given.push_back(flag.key);
  }
  const runtime::WorldChoice world = runtime::choose_world({.runtime = options.runtime,
                                                            .workers = options.workers,
                                                            .workers_binding = workers_flag,
                                                            .process = options.process},
                                                           runtime::process_environment());
  options.runtime = world.runtime;
  options.process = world.process;
  if (options.workers == 0) options.workers = defaults.workers;
  options.process.shared_settings = settings::shared_settings(options);  // checked between the processes
  if (!announce) return options;
  std::fprintf(stderr, "fast train: %s\n", world.describe().c_str());
  for (const std::string& warning : world.warnings) std::fprintf(stderr, "fast train: warning: %s\n", warning.c_str());
  for (const std::string& warning : settings::unread_strategy_options(options.worker.strategy.name, given))
    std::fprintf(stderr, "fast train: warning: %s\n", warning.c_str());
  for (const std::string& warning : settings::inert_settings(options, given))
    std::fprintf(stderr, "fast train: warning: %s\n", warning.c_str());
  return options;
}

}  // namespace fast::cli
