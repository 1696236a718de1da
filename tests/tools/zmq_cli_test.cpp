// `fast launch -n 4 -- fast train --runtime zmq`: four processes of one worker train like four
// threads. Synchronous strategies end with the same final parameters as under `threads` with the
// same seed (param_hash, bit for bit); asynchronous ones within 1 point of their accuracy under
// `threads`; so do two processes without shared memory, whose all-reduce chooses otherwise. Faults: a worker process
// killed (SIGKILL) or frozen (SIGSTOP) at a random moment ends a synchronous run with PeerLost naming it within the
// peer timeout + 5 s, never a hang; under an asynchronous strategy the survivors finish and the summary lists the lost
// worker. Churn and restarts: zmq_churn_test.cpp.

#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "common/poll.hpp"
#include "common/run_fast.hpp"
#include "common/spawned.hpp"

#include "zmq_cli_common.hpp"

namespace {

namespace fs = std::filesystem;
namespace exit_code = fast::core::exit_code;
using fast::testing::dir_name;
using fast::testing::slurp;
using nlohmann::json;
using clock_type = std::chrono::steady_clock;

using namespace fast::testing::zmq_cli;  // NOLINT(google-build-using-namespace): the shared helpers

// The summary of `fast train --runtime threads --workers 4 ARGS`.
json threads_run(const fs::path& dir, const std::string& args) {
  const auto r =
      fast::testing::run_fast_in(dir, "train --runtime threads --workers 4 --summary t.json" + kTrain + args);
  EXPECT_EQ(r.code, exit_code::ok) << r.output;
  return json::parse(slurp(dir / "t.json"));
}

// The summary of `fast launch -n 4 -- fast train --runtime zmq ARGS` (rank 0 writes it).
json zmq_run(const fs::path& dir, const std::string& args, const std::string& launch = "") {
  const auto r = fast::testing::run_fast_in(dir, "launch -n 4 --timeout 600 " + launch + " -- " + kFast +
                                                     " train --runtime zmq --summary z.json" + kTrain + args);
  EXPECT_EQ(r.code, exit_code::ok) << r.output;
  return json::parse(slurp(dir / "z.json"));
}

class ZmqSynchronous : public ::testing::TestWithParam<std::string> {};

TEST_P(ZmqSynchronous, EndsWithTheSameParametersAsThreads) {
  const fs::path dir = fast::testing::test_dir("fast_zmq_cli", "sync_" + dir_name(GetParam()));
  const std::string args = "--batch 32 --steps 60 --strategy " + GetParam();
  const json t = threads_run(dir, args), z = zmq_run(dir, args);
  ASSERT_TRUE(t.contains("param_hash")) << t.dump();
  EXPECT_EQ(z["param_hash"], t["param_hash"]) << "zmq " << z.dump() << "\nthreads " << t.dump();
  EXPECT_EQ(z["workers"], 4);
  EXPECT_EQ(z["runtime"], "zmq");
  fs::remove_all(dir);
}

// local-sgd averages with the all-reduce that allreduce's case checks: labelled long (`make test-all`).
INSTANTIATE_TEST_SUITE_P(Strategies, ZmqSynchronous, ::testing::Values("allreduce", "ps --mode sync", "dpsgd"),
                         [](const auto& info) { return dir_name(info.param); });
INSTANTIATE_TEST_SUITE_P(LongStrategies, ZmqSynchronous, ::testing::Values("local-sgd --period 2"),
                         [](const auto& info) { return dir_name(info.param); });

TEST(ZmqSynchronous, TcpTransportAndTwoWorkersPerProcessGiveTheSameParameters) {
  const fs::path dir = fast::testing::test_dir("fast_zmq_cli", "tcp_k2");
  const std::string args = "--batch 32 --steps 40 --strategy allreduce";
  const json t = threads_run(dir, args);
  const auto r = fast::testing::run_fast_in(dir, "launch -n 2 --timeout 600 -- env FAST_TRANSPORT=tcp " + kFast +
                                                     " train --runtime zmq --workers-per-process 2 --summary z.json" +
                                                     " --metrics m.jsonl" + kTrain + args);
  ASSERT_EQ(r.code, exit_code::ok) << r.output;
  EXPECT_EQ(json::parse(slurp(dir / "z.json"))["param_hash"], t["param_hash"]);
  // Each process names the metrics file it wrote: its per-process name (docs/metrics.md).
  for (const char* file : {"m.rank0.jsonl", "m.rank2.jsonl"}) {
    EXPECT_TRUE(fs::exists(dir / file)) << file;
    EXPECT_NE(r.output.find(std::string("metrics: ") + file), std::string::npos) << r.output;
  }
  EXPECT_EQ(r.output.find("metrics: m.jsonl"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

// Two processes with no shared memory between them (as on two hosts) all-reduce a 37,764-parameter
// mlp's gradients (151 KB) by recursive doubling, where threads take the ring (docs/collectives.md,
// "Where the network comes from"): every algorithm gives a group of two the same bits, so the
// run still ends with the param_hash of threads.
TEST(ZmqSynchronous, TwoProcessesWithoutSharedMemoryAllReduceOtherwiseWithTheBitsOfThreads) {
  const fs::path dir = fast::testing::test_dir("fast_zmq_cli", "pair_noshm");
  const std::string args =
      " --dataset synthetic:shape=16,classes=4,train=2048,test=256 --batch 32 --epochs 1 --strategy allreduce";
  const auto t =
      fast::testing::run_fast_in(dir, "train --runtime threads --workers 2 --summary t.json" + kTrain + args);
  ASSERT_EQ(t.code, exit_code::ok) << t.output;
  const auto z = fast::testing::run_fast_in(dir, "launch -n 2 --timeout 600 -- env FAST_SHM_BYTES=0 " + kFast +
                                                     " train --runtime zmq --summary z.json" + kTrain + args);
  ASSERT_EQ(z.code, exit_code::ok) << z.output;
  const json threads = json::parse(slurp(dir / "t.json")), zmq = json::parse(slurp(dir / "z.json"));
  EXPECT_EQ(threads["parameters"], 37764);
  EXPECT_GT(threads["allreduce_algorithms"].value("ring", 0), 0) << threads["allreduce_algorithms"].dump();
  EXPECT_FALSE(zmq["allreduce_algorithms"].contains("ring")) << zmq["allreduce_algorithms"].dump();
  EXPECT_GT(zmq["allreduce_algorithms"].value("recursive-doubling", 0), 0) << zmq["allreduce_algorithms"].dump();
  EXPECT_EQ(zmq["param_hash"], threads["param_hash"]);
  fs::remove_all(dir);
}

// Not run by ctest (the test's name starts with DISABLED_; a suite prefix would not disable a
// parameterised suite, whose full name starts with its instantiation's): asynchronous runs are not reproducible, under
// threads either, and on a loaded 2-core machine two runs of one side differ by up to 2 points at this length, so a
// 1-point bound between the sides is a measurement, not a pass/fail check CI can rely on. Run it
// by hand on a quiet machine (docs/launch.md, "Checks"):
//   build/bin/zmq_cli_test --gtest_also_run_disabled_tests --gtest_filter='*ZmqAsynchronous*'
class ZmqAsynchronous : public ::testing::TestWithParam<std::string> {};

TEST_P(ZmqAsynchronous, DISABLED_ReachesTheAccuracyOfThreadsWithinOnePoint) {
  const fs::path dir = fast::testing::test_dir("fast_zmq_cli", "async_" + dir_name(GetParam()));
  // One epoch with momentum reaches the plateau (about 0.84), where the order in which 4 processes
  // on 2 cores happen to run moves the accuracy by well under a point.
  const std::string args =
      "--batch 64 --epochs 1 --optimizer momentum --momentum 0.9 --lr 0.01 --strategy " + GetParam();
  const json t = threads_run(dir, args), z = zmq_run(dir, args);
  EXPECT_NEAR(z["final_accuracy"].get<double>(), t["final_accuracy"].get<double>(), 0.01)
      << "zmq " << z.dump() << "\nthreads " << t.dump();
  fs::remove_all(dir);
}

// Each of the six must end within the tolerance of threads' accuracy. easgd is the sensitive one:
// it ended 1.3-2.3 points below when worker 0, which holds the centre, took most of the steps, as
// it did before the shared-memory rings reused their first pages (docs/launch.md, "Checks").
INSTANTIATE_TEST_SUITE_P(Strategies, ZmqAsynchronous,
                         ::testing::Values("ps --mode async", "ps --mode ssp --staleness 2",
                                           "easgd --tau 2 --alpha 0.1", "adpsgd", "gosgd", "acid"),
                         [](const auto& info) { return dir_name(info.param); });

// ----------------------------------------------------------------------------- faults

// fast launch -n 4 (and its workers) in a process group of its own, its output in dir/launch.log.
// --grace: after a worker's death the survivors of an asynchronous run train on to the end (much
// longer under AddressSanitizer), within the test's 240 s wait.
Launched start_launch(const fs::path& dir, const std::string& train_args) {
  return fast::testing::spawn_in_group(dir,
                                       kFast + " launch -n 4 --grace 200 --timeout 300 -- " + kFast +
                                           " train --runtime zmq" + kPeerTimeoutFlag + " --summary s.json" +
                                           kTrainShown + train_args,
                                       "launch.log");
}

struct Fault {
  std::string strategy;
  int signal;  // SIGKILL or SIGSTOP
  bool synchronous;
};

void PrintTo(const Fault& f, std::ostream* os) { *os << f.strategy << (f.signal == SIGKILL ? " SIGKILL" : " SIGSTOP"); }

class ZmqFault : public ::testing::TestWithParam<std::tuple<Fault, int>> {};

TEST_P(ZmqFault, LostWorkerIsNamedAndNothingHangs) {
  const auto& [fault, seed] = GetParam();
  const fs::path dir =
      fast::testing::test_dir("fast_zmq_cli", "fault_" + dir_name(fault.strategy) + "_" + std::to_string(fault.signal) +
                                                  "_" + std::to_string(seed));
  std::mt19937 random(static_cast<unsigned>(seed));
  const int victim = 1 + static_cast<int>(random() % 3);  // worker 0 holds budgets, centres and servers
  const double delay = 0.2 + (random() % 500) / 1000.0;   // after the first progress line, at a random moment
  // Synchronous runs end at the fault; asynchronous ones go on with the survivors, through a budget
  // that lasts well past the loss's detection (kPeerTimeout; several peer timeouts of training).
  const std::string steps = fault.synchronous ? "1000" : "500";
  Launched l = start_launch(dir, "--batch 32 --steps " + steps + " --strategy " + fault.strategy);
  const pid_t pid = worker_pid(l, victim);
  ASSERT_GT(pid, 0) << slurp(l.log);
  const fast::testing::RemovesSocketFiles killed{pid};
  // Killing a process before every process has joined the rendezvous is another fault (the
  // survivors wait --rendezvous-timeout for it); this test is about a fault during training.
  ASSERT_TRUE(training_started(l)) << slurp(l.log);
  std::this_thread::sleep_for(std::chrono::duration<double>(delay));
  const auto hit = clock_type::now();
  kill(pid, fault.signal);
  const std::string name = "worker " + std::to_string(victim);
  if (fault.synchronous) {
    // The survivors end within peer timeout + 5 s, naming the lost worker.
    const int bound = kPeerTimeout + 5;
    bool reported = false;
    while (!reported && clock_type::now() - hit < std::chrono::seconds(bound)) {
      const std::string log = slurp(l.log);
      reported = log.find("peer lost") != std::string::npos && log.find(name) != std::string::npos;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (fault.signal == SIGSTOP) kill(pid, SIGKILL);  // a frozen process never ends by itself
    const int status = fast::testing::wait_or_kill_group(l, 10);
    const std::string log = slurp(l.log);
    EXPECT_TRUE(reported) << "no survivor reported the lost worker within " << bound << " s; output:\n" << log;
    EXPECT_NE(status, -1) << "fast launch did not end; output:\n" << log;
    EXPECT_FALSE(fs::exists(dir / "s.json"));
    // News of a failure passed on from process to process names its root once
    // (ZmqTransport::mark_said_bye), not one "failed: worker N (...)" more per process it went through.
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
      const std::size_t first = line.find("failed: worker ");
      EXPECT_TRUE(first == std::string::npos || line.find("failed: worker ", first + 1) == std::string::npos) << line;
    }
  } else {
    const int status = fast::testing::wait_or_kill_group(l, 240);
    const std::string log = slurp(l.log);
    ASSERT_NE(status, -1) << "fast launch did not end; output:\n" << log;
    ASSERT_TRUE(fs::exists(dir / "s.json")) << log;
    const json s = json::parse(slurp(dir / "s.json"));
    EXPECT_EQ(s["lost_workers"], json::array({victim})) << s.dump() << "\n" << log;
    EXPECT_TRUE(s["final_accuracy"].is_number()) << s.dump();
  }
  fs::remove_all(dir);
}

std::string fault_name(const ::testing::TestParamInfo<std::tuple<Fault, int>>& info) {
  const auto& [f, seed] = info.param;
  return dir_name(f.strategy) + (f.signal == SIGKILL ? "_SIGKILL_seed" : "_SIGSTOP_seed") + std::to_string(seed);
}

// Ten kill moments (seeds) per synchronous strategy: the first in every `make test`, 2-10 labelled
// long (`make test-all`; tests/CMakeLists.txt), as are SIGSTOP's second and third seeds and the
// asynchronous strategies' second.
const auto kSynchronousFaults = ::testing::Values(Fault{"allreduce", SIGKILL, true}, Fault{"dpsgd", SIGKILL, true},
                                                  Fault{"ps --mode sync", SIGKILL, true});
INSTANTIATE_TEST_SUITE_P(Synchronous, ZmqFault, ::testing::Combine(kSynchronousFaults, ::testing::Range(1, 2)),
                         fault_name);
INSTANTIATE_TEST_SUITE_P(LongSynchronous, ZmqFault, ::testing::Combine(kSynchronousFaults, ::testing::Range(2, 11)),
                         fault_name);
const auto kFrozenFault = ::testing::Values(Fault{"allreduce", SIGSTOP, true});
INSTANTIATE_TEST_SUITE_P(Frozen, ZmqFault, ::testing::Combine(kFrozenFault, ::testing::Range(1, 2)), fault_name);
INSTANTIATE_TEST_SUITE_P(LongFrozen, ZmqFault, ::testing::Combine(kFrozenFault, ::testing::Range(2, 4)), fault_name);
const auto kAsynchronousFaults =
    ::testing::Values(Fault{"adpsgd", SIGKILL, false}, Fault{"gosgd", SIGKILL, false}, Fault{"acid", SIGKILL, false},
                      Fault{"ps --mode async", SIGKILL, false}, Fault{"easgd --tau 2 --alpha 0.1", SIGKILL, false});
INSTANTIATE_TEST_SUITE_P(Asynchronous, ZmqFault, ::testing::Combine(kAsynchronousFaults, ::testing::Range(1, 2)),
                         fault_name);
INSTANTIATE_TEST_SUITE_P(LongAsynchronous, ZmqFault, ::testing::Combine(kAsynchronousFaults, ::testing::Range(2, 3)),
                         fault_name);

}  // namespace
