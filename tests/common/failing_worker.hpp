#pragma once
// A world of 3 workers in which worker 2 fails (IoError "disk on fire") while the other two are
// blocked in something only worker 2 could complete: both must be released with a RemoteError
// naming the cause, and the world must rethrow the root cause, not the RemoteErrors it caused.

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>

#include "fast/core/error.hpp"
#include "fast/runtime/context.hpp"

namespace fast::testing {

// run_world(fn): runs fn on every worker of a 3-worker world and rethrows the first worker error.
// blocked(ctx): what workers 0 and 1 wait in.
template <typename RunWorld>
void expect_failure_releases_the_others(RunWorld run_world, const std::function<void(runtime::Context&)>& blocked) {
  std::atomic<int> released{0};
  try {
    run_world([&](runtime::Context& ctx) {
      if (ctx.rank() == 2) throw core::IoError("disk on fire");
      try {
        blocked(ctx);
      } catch (const core::RemoteError& e) {
        EXPECT_NE(std::string(e.what()).find("worker 2 failed: disk on fire"), std::string::npos) << e.what();
        ++released;
        throw;
      }
    });
    FAIL() << "no throw";
  } catch (const core::IoError& e) {
    EXPECT_STREQ(e.what(), "disk on fire");  // the root cause, not the RemoteErrors it caused
  }
  EXPECT_EQ(released.load(), 2);
}

}  // namespace fast::testing
