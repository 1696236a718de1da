#pragma once
// Starting a world of workers by runtime name. A launcher runs fn once per worker, each with its
// own Context, and returns when all returned. If a worker throws, the others are released from
// their waits (RemoteError) and the first error is rethrown by launch().

#include <functional>
#include <string>
#include <vector>

#include "fast/runtime/context.hpp"

namespace fast::runtime {

using WorkerFn = std::function<void(Context&)>;

struct LaunchOptions {
  std::string runtime = "threads";  // one of runtime_names()
  int workers = 1;                  // number of workers, >= 1
  double op_timeout_seconds = -1;   // blocking-operation limit; < 0: FAST_OP_TIMEOUT
};

// Names accepted by LaunchOptions::runtime in this build.
std::vector<std::string> runtime_names();

// Runs fn on every worker of a new world. Throws InvalidArgument for an unknown runtime (listing
// the allowed names) or a bad worker count.
void launch(const LaunchOptions& options, const WorkerFn& fn);

}  // namespace fast::runtime
