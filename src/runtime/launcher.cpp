#include "fast/runtime/launcher.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
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
  FAST_THROW(core::InvalidArgument, "runtime: unknown name '{}'; expected one of: {}", name,
             fmt::join(runtime_names(), ", "));
}

double launch(const LaunchOptions& options, const WorkerFn& fn) {
  const RuntimeBackend& backend = find_runtime(options.runtime);
  FAST_ENFORCE(options.workers >= 1, "workers: expected a count >= 1, got {}", options.workers);
  FAST_ENFORCE(options.cluster.empty() || options.runtime == "sim",
               "cluster: a cluster file is for the sim runtime, got runtime '{}' with cluster '{}'", options.runtime,
               options.cluster.string());
  LaunchOptions resolved = options;
  if (resolved.collectives.empty()) resolved.collectives = core::env_string("FAST_COLLECTIVES");
  if (resolved.collectives.empty()) resolved.collectives = backend.native_collectives ? "native" : "fast";
  FAST_ENFORCE(resolved.collectives == "fast" || resolved.collectives == "native",
               "collectives: expected fast or native, got '{}'", resolved.collectives);
  FAST_ENFORCE(resolved.collectives == "fast" || backend.native_collectives,
               "collectives: native: the {} runtime has no native collectives (the mpi runtime has); use fast",
               options.runtime);
  if (resolved.windows.empty()) resolved.windows = core::env_string("FAST_WINDOWS");
  if (resolved.windows.empty()) resolved.windows = backend.remote_memory ? "rma" : "service";
  FAST_ENFORCE(resolved.windows == "rma" || resolved.windows == "service",
               "windows: expected rma or service, got '{}'", resolved.windows);
  FAST_ENFORCE(resolved.windows == "service" || backend.remote_memory,
               "windows: rma: the {} runtime has no one-sided memory (the mpi runtime has); use service",
               options.runtime);
  return backend.launch(resolved, fn);
}

}  // namespace fast::runtime
