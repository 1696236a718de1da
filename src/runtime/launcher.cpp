#include "fast/runtime/launcher.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/core/suggest.hpp"
#include "fast/runtime/detect.hpp"
#include "fast/runtime/environment.hpp"
#include "fast/runtime/registry.hpp"

namespace fast::runtime {

std::vector<std::string> runtime_names() {
  std::vector<std::string> names;
  for (const RuntimeBackend& b : runtime_backends()) names.emplace_back(b.name);
  return names;
}

const RuntimeBackend& find_runtime(std::string_view name) {
  for (const RuntimeBackend& b : runtime_backends())
    if (b.name == name) return b;
  FAST_THROW(core::InvalidArgument, "runtime: unknown name '{}'{}; expected one of: {}", name,
             core::did_you_mean(name, runtime_names()), fmt::join(runtime_names(), ", "));
}

namespace {
// A choice between FAST's own way (`portable`, every runtime) and a runtime's capability
// (`special`, where `offered`): the option, else environment variable `env`, else the capability
// where the runtime has it. InvalidArgument for another value, or for `special` without it,
// naming the option or the variable it came from.
std::string resolve_choice(std::string value, const char* key, const char* env, const char* portable,
                           const char* special, bool offered, const char* capability, const std::string& runtime) {
  std::string source = key;
  if (value.empty()) {
    value = core::env_string(runtime_environment(), env);
    if (!value.empty()) source = fmt::format("environment variable {}", env);
  }
  if (value.empty()) value = offered ? special : portable;
  FAST_ENFORCE(value == portable || value == special, "{}: expected {} or {}, got '{}'", source, portable, special,
               value);
  FAST_ENFORCE(value == portable || offered, "{}: {}: the {} runtime has no {} (the mpi runtime has); use {}", source,
               special, runtime, capability, portable);
  return value;
}

// options with collectives and windows resolved (resolve_choice).
LaunchOptions with_choices(const LaunchOptions& options, const RuntimeBackend& backend) {
  LaunchOptions resolved = options;
  resolved.collectives = resolve_choice(options.collectives, "collectives", "FAST_COLLECTIVES", "fast", "native",
                                        backend.native_collectives, "native collectives", options.runtime);
  resolved.windows = resolve_choice(options.windows, "windows", "FAST_WINDOWS", "service", "rma", backend.remote_memory,
                                    "one-sided memory", options.runtime);
  return resolved;
}
}  // namespace

void check_launch_options(const LaunchOptions& options) {
  const RuntimeBackend& backend = find_runtime(options.runtime);
  FAST_ENFORCE(options.workers >= 1, "workers: expected a count >= 1, got {}", options.workers);
  // -1 alone means "the default": another negative number is a mistake, not a wish for the default.
  FAST_ENFORCE(options.op_timeout_seconds == -1 || options.op_timeout_seconds > 0,
               "op_timeout: expected seconds > 0, or -1 for the default (FAST_OP_TIMEOUT), got {}",
               options.op_timeout_seconds);
  FAST_ENFORCE(options.cluster.empty() || backend.simulated_clock,
               "cluster: a cluster file is for a simulated runtime (sim), got runtime '{}' with cluster '{}'",
               options.runtime, options.cluster.string());
  const LaunchOptions resolved = with_choices(options, backend);
  if (backend.check != nullptr) backend.check(resolved);
}

double launch(const LaunchOptions& options, const WorkerFn& fn) {
  check_launch_options(options);
  refuse_copies_of_one_run(options.runtime, process_environment());
  const RuntimeBackend& backend = find_runtime(options.runtime);
  return backend.launch(with_choices(options, backend), fn);
}

}  // namespace fast::runtime
