// The runtime contract's end of a run that a worker's error ended (include/fast/runtime/launcher.hpp),
// in the suite of conformance_test.cpp: which error each process's launch() throws.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "conformance.hpp"
#include "fast/core/error.hpp"

namespace fast::runtime::conformance {
namespace {

// The last worker fails by its own code (an IoError) while the others wait for a message from it.
// The process hosting it ends with that IoError, not with a loss that a peer reported meanwhile
// (under zmq the others fail in turn, and their failure, which names the last worker's, comes back
// to its process while it ends); every other process ends with PeerLost or RemoteError that names
// the failure. threads and sim host every worker: their launch() throws the IoError.
TEST_P(Conformance, AWorkersOwnErrorIsItsProcesssErrorAndTheOthersNameIt) {
  constexpr const char* kOwn = "the last worker's own failure";
  std::atomic<bool> hosts_last{false};
  auto fn = [&](Context& ctx) {
    const int last = ctx.size() - 1;
    if (ctx.rank() == last) {
      hosts_last = true;
      throw core::IoError(kOwn);
    }
    std::vector<float> v(1);
    ctx.recv(last, user_tag(12), mview(v)).wait();
    ADD_FAILURE() << "worker " << ctx.rank() << " received from a worker that failed";
  };
  const LaunchOptions options{.op_timeout_seconds = 30};
  if (in_parent_of_processes()) {
    run(fn, options);  // the children check their own ends
    return;
  }
  try {
    run(fn, options);
    ADD_FAILURE() << "the run of a failed worker returned";
  } catch (const core::IoError& e) {
    EXPECT_TRUE(hosts_last) << "a process without the failed worker ended with its error: " << e.what();
    EXPECT_NE(std::string(e.what()).find(kOwn), std::string::npos) << e.what();
  } catch (const core::PeerLost& e) {
    EXPECT_FALSE(hosts_last) << "the failed worker's process ended with a loss: " << e.what();
    EXPECT_NE(std::string(e.what()).find(kOwn), std::string::npos) << e.what();
  } catch (const core::RemoteError& e) {
    EXPECT_FALSE(hosts_last) << "the failed worker's process ended with another's error: " << e.what();
    EXPECT_NE(std::string(e.what()).find(kOwn), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fast::runtime::conformance
