// The `fast` command. Subcommands: train, config-doc. Exceptions become exit codes here and only
// here (docs/errors.md): 0 success, 2 bad input or usage, 3 I/O or peer failure, 4 timeout,
// 5 other FAST error, 1 anything else.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "config.hpp"
#include "fast/adapters/torch/trainer.hpp"
#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "progress.hpp"

namespace {

std::string environment_help() {
  std::string text = "\nEnvironment:\n";
  for (const auto& v : fast::core::env_table())
    text += fmt::format("  {:<20} {} (default: {})\n", v.name, v.description, v.default_value);
  return text;
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
  const fast::torch::TrainOptions defaults;
  std::vector<std::string> values(fast::cli::config_keys().size());
  for (std::size_t i = 0; i < fast::cli::config_keys().size(); ++i) {
    const auto& key = fast::cli::config_keys()[i];
    train->add_option(fast::cli::flag_name(key.name), values[i],
                      fmt::format("{} [{}, default {}]", key.description, fast::cli::key_type_name(key.type),
                                  key.get(defaults).empty() ? "none" : key.get(defaults)));
  }

  CLI::App* doc = app.add_subcommand("config-doc", "Print the settings table (markdown) used in docs/config.md");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (doc->parsed()) {
    std::cout << fast::cli::config_markdown();
    return 0;
  }

  fast::torch::TrainOptions options;
  if (!config_path.empty()) fast::cli::apply_config_file(options, config_path);
  for (std::size_t i = 0; i < fast::cli::config_keys().size(); ++i) {
    const auto& key = fast::cli::config_keys()[i];
    const std::string flag = fast::cli::flag_name(key.name);
    if (train->count(flag) > 0) fast::cli::apply_setting(options, key.name, values[i], flag);
  }
  const bool terminal = progress_mode == "always" || (progress_mode == "auto" && ::isatty(STDERR_FILENO));
  fast::cli::ProgressDisplay display(terminal, progress_mode == "never");
  std::fprintf(stderr, "fast train: %s, %d workers (%s), model %s, batch %lld per worker, optimizer %s lr %g\n",
               options.worker.strategy.name.c_str(), options.workers, options.runtime.c_str(), options.model.c_str(),
               static_cast<long long>(options.batch), options.worker.optimizer.name.c_str(),
               options.worker.optimizer.lr);
  const auto wall_start = std::chrono::steady_clock::now();
  const nlohmann::json summary = fast::torch::train(
      options, [&](const fast::torch::Progress& p) { display.on_progress(p); },
      [&](const fast::torch::EpochReport& e) { display.on_epoch(e); });
  std::printf("final test accuracy: %.4f (%s, %d workers, %lld steps, %.1f s, %.0f samples/s)\n",
              summary["final_accuracy"].get<double>(), options.worker.strategy.name.c_str(), options.workers,
              summary["steps"].get<long long>(), summary["wall_seconds"].get<double>(),
              summary["samples_per_second"].get<double>());
  if (summary.contains("simulated_seconds")) {
    // The only wall-clock figure of a sim run: printed, never written to the metrics or summary.
    std::printf("simulated: %.3f s on %s; wall time of the simulation: %.1f s\n",
                summary["simulated_seconds"].get<double>(),
                options.cluster.empty() ? "the default cluster" : options.cluster.c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count());
  }
  std::printf("metrics: %s\n", options.metrics.empty() ? "(none: set --metrics FILE)" : options.metrics.c_str());
  std::printf("summary: %s\n", options.summary.empty() ? "(none: set --summary FILE)" : options.summary.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const fast::InvalidArgument& e) {
    std::fprintf(stderr, "fast: error: %s\n", e.what());
    return 2;
  } catch (const fast::InvalidUsage& e) {
    std::fprintf(stderr, "fast: error: %s\n", e.what());
    return 2;
  } catch (const fast::IoError& e) {
    std::fprintf(stderr, "fast: I/O error: %s\n", e.what());
    return 3;
  } catch (const fast::PeerLost& e) {
    std::fprintf(stderr, "fast: peer lost: %s\n", e.what());
    return 3;
  } catch (const fast::TimeoutError& e) {
    std::fprintf(stderr, "fast: timeout: %s\n", e.what());
    return 4;
  } catch (const fast::Error& e) {
    std::fprintf(stderr, "fast: error: %s\n", e.what());
    return 5;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fast: unexpected error: %s\n", e.what());
    return 1;
  }
}
