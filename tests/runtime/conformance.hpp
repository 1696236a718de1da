#pragma once
// The fixture of the runtime contract suite (conformance_test.cpp, conformance_optional_test.cpp):
// one worker function run by testing::run_world (tests/common/world_runner.hpp) on every runtime
// of the build, as cases() lists them.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/views.hpp"
#include "common/world_runner.hpp"
#include "fast/runtime/launcher.hpp"

namespace fast::runtime::conformance {

using testing::cview;
using testing::mview;
using testing::WorldCase;

constexpr Tag user_tag(std::uint32_t seq, std::uint32_t detail = 0) { return make_tag(TagKind::user, seq, detail); }

class Conformance : public ::testing::TestWithParam<WorldCase> {
 protected:
  void run(const WorkerFn& fn, LaunchOptions options = {}) { testing::run_world(GetParam(), fn, options); }
  bool in_parent_of_processes() const {
    return (GetParam().runtime == "zmq" || GetParam().runtime == "mpi") && !testing::is_test_child();
  }
};

// Every runtime of this build (a build without SimGrid or ZeroMQ lacks their cases).
std::vector<WorldCase> cases();

}  // namespace fast::runtime::conformance
