// `mpirun -np 4 fast train --runtime mpi`: four MPI ranks of one worker train like four threads.
// Synchronous strategies end with the same final parameters as under `threads` with the same seed:
// bit for bit (param_hash) with FAST's collectives, within 1e-6 relative (the parameters' norm)
// with MPI's native ones, which add in another order. Every asynchronous strategy trains. A rank
// killed during training ends the job (MPI is fail-stop) with an error on every other rank, never a
// hang. Every mpirun runs in a process group of its own, bounded in time and killed as a group.
// Suites and instantiations named Long* are labelled long (`make test-all`, tests/CMakeLists.txt):
// they repeat a property another instantiation checks in every `make test`.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "common/poll.hpp"
#include "common/run_fast.hpp"
#include "common/spawned.hpp"

namespace {

namespace fs = std::filesystem;
namespace exit_code = fast::core::exit_code;
using fast::testing::dir_name;
using fast::testing::slurp;
using nlohmann::json;
using Started = fast::testing::Spawned;
using fast::testing::wait_or_kill_group;

const std::string kFast = std::string(FAST_TEST_BIN_DIR) + "/fast";
const std::string kTrain = " --model mlp --seed 11 --eval-every 0 ";

// mpirun (and its ranks) in a process group of its own, as root where the tests run as root.
Started start(const fs::path& dir, const std::string& command) {
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  fast::testing::private_mpi_session_base();
  return fast::testing::spawn_in_group(dir, command);
}

bool exited_cleanly(int status) { return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string mpirun(int ranks, const std::string& train_args) {
  return "mpirun -np " + std::to_string(ranks) + " --oversubscribe " + kFast + " train --runtime mpi" + kTrain +
         train_args;
}

json threads_run(const fs::path& dir, const std::string& args) {
  const auto r = fast::testing::run_fast_in(
      dir, "train --runtime threads --workers 4 --progress never --summary t.json" + kTrain + args);
  EXPECT_EQ(r.code, exit_code::ok) << r.output;
  return json::parse(slurp(dir / "t.json"));
}

json mpi_run(const fs::path& dir, const std::string& args) {
  fs::remove(dir / "m.json");
  const Started s = start(dir, mpirun(4, "--progress never --summary m.json " + args));
  const int status = wait_or_kill_group(s, 300);
  EXPECT_TRUE(exited_cleanly(status)) << "mpirun: " << args << "\n" << slurp(s.log);
  if (!fs::exists(dir / "m.json")) return json::object();
  return json::parse(slurp(dir / "m.json"));
}

class MpiSynchronous : public ::testing::TestWithParam<std::string> {};

TEST_P(MpiSynchronous, EndsWithTheParametersOfThreads) {
  const fs::path dir = fast::testing::test_dir("fast_mpi_cli", "sync_" + dir_name(GetParam()));
  const std::string args = "--batch 32 --steps 60 --strategy " + GetParam();
  const json t = threads_run(dir, args);
  const json ring = mpi_run(dir, args + " --collectives fast");
  const json native = mpi_run(dir, args);  // the default: MPI's collectives
  ASSERT_TRUE(t.contains("param_hash")) << t.dump();
  EXPECT_EQ(ring["param_hash"], t["param_hash"]) << "mpi " << ring.dump() << "\nthreads " << t.dump();
  EXPECT_EQ(ring["runtime"], "mpi");
  EXPECT_EQ(ring["workers"], 4);
  ASSERT_TRUE(native.contains("param_norm")) << native.dump();
  const double norm = t["param_norm"].get<double>();
  EXPECT_LE(std::abs(native["param_norm"].get<double>() - norm), 1e-6 * norm)
      << "mpi native " << native.dump() << "\nthreads " << t.dump();
  fs::remove_all(dir);
}

// local-sgd averages with the all-reduce that allreduce's case checks (native and ring): long.
INSTANTIATE_TEST_SUITE_P(Strategies, MpiSynchronous, ::testing::Values("allreduce", "ps --mode sync", "dpsgd"),
                         [](const auto& info) { return dir_name(info.param); });
INSTANTIATE_TEST_SUITE_P(LongStrategies, MpiSynchronous, ::testing::Values("local-sgd --period 2"),
                         [](const auto& info) { return dir_name(info.param); });

// Every asynchronous strategy trains across ranks: a summary of 4 workers and an accuracy far
// above chance (0.1) after 300 steps (threads reach 0.70-0.75 there). How close they come to
// threads is measured by MpiAsynchronous.DISABLED_WithinOnePointOfThreads (docs/launch.md).
class MpiAsynchronous : public ::testing::TestWithParam<std::string> {};

TEST_P(MpiAsynchronous, Trains) {
  const fs::path dir = fast::testing::test_dir("fast_mpi_cli", "async_" + dir_name(GetParam()));
  const json m = mpi_run(dir, "--batch 32 --steps 300 --strategy " + GetParam());
  ASSERT_TRUE(m.contains("final_accuracy")) << m.dump();
  EXPECT_EQ(m["workers"], 4);
  EXPECT_EQ(m.value("lost_workers", json::array()), json::array()) << m.dump();  // absent when none
  EXPECT_GT(m["final_accuracy"].get<double>(), 0.5) << m.dump();
  fs::remove_all(dir);
}

// A measurement run by hand (asynchronous runs are not reproducible, and a 1-point bound between
// two of them is not something CI on a loaded 2-core machine can rely on):
//   build/bin/mpi_cli_test --gtest_also_run_disabled_tests --gtest_filter='*DISABLED_Within*'
TEST_P(MpiAsynchronous, DISABLED_WithinOnePointOfThreads) {
  const fs::path dir = fast::testing::test_dir("fast_mpi_cli", "async1_" + dir_name(GetParam()));
  const std::string args =
      "--batch 64 --epochs 1 --optimizer momentum --momentum 0.9 --lr 0.01 --strategy " + GetParam();
  const json t = threads_run(dir, args), m = mpi_run(dir, args);
  EXPECT_NEAR(m["final_accuracy"].get<double>(), t["final_accuracy"].get<double>(), 0.01)
      << "mpi " << m.dump() << "\nthreads " << t.dump();
  fs::remove_all(dir);
}

// In every `make test` the parameter server and pairwise gossip; the others labelled long (their window
// operations on MPI RMA are checked by window_one_sided_test, their training by the other runtimes').
INSTANTIATE_TEST_SUITE_P(Strategies, MpiAsynchronous, ::testing::Values("ps --mode async", "adpsgd"),
                         [](const auto& info) { return dir_name(info.param); });
INSTANTIATE_TEST_SUITE_P(LongStrategies, MpiAsynchronous,
                         ::testing::Values("ps --mode ssp --staleness 2", "easgd --tau 2 --alpha 0.1", "gosgd", "acid"),
                         [](const auto& info) { return dir_name(info.param); });

// A rank killed (SIGKILL) during training: mpirun ends the job within 30 s, exits with an error,
// and every other rank writes why it ended.
// Where MPI has no one-sided component for the job (OpenMPI's osc pt2pt, forced here, refuses
// MPI_THREAD_MULTIPLE), every window falls back to the service with a warning on every rank, and
// an asynchronous run trains to the end.
TEST(MpiWindows, FallBackToTheServiceWhereMpiHasNoOneSidedComponent) {
  const fs::path dir = fast::testing::test_dir("fast_mpi_cli", "windows_fallback");
  ::setenv("OMPI_MCA_osc", "pt2pt", 1);  // forwarded to the ranks by mpirun
  const Started s = start(dir, mpirun(2, "--progress never --summary m.json --batch 32 --steps 40 --strategy adpsgd"));
  ::unsetenv("OMPI_MCA_osc");
  const int status = wait_or_kill_group(s, 120);
  const std::string log = slurp(s.log);
  ASSERT_TRUE(exited_cleanly(status)) << log;
  EXPECT_EQ(fast::testing::count_of(log, "MPI offers no one-sided windows"), 2) << "one warning per rank:\n" << log;
  const json m = json::parse(slurp(dir / "m.json"));
  EXPECT_EQ(m["steps"], 40) << m.dump();
  EXPECT_GT(m["final_accuracy"].get<double>(), 0.3) << m.dump();
  fs::remove_all(dir);
}

class MpiFault : public ::testing::TestWithParam<int> {};

TEST_P(MpiFault, AKilledRankEndsTheJobWithAnErrorOnEveryRank) {
  const int seed = GetParam();
  const fs::path dir = fast::testing::test_dir("fast_mpi_cli", "fault_" + std::to_string(seed));
  std::mt19937 random(static_cast<unsigned>(seed));
  const int victim = 1 + static_cast<int>(random() % 3);
  const Started s = start(dir, mpirun(4, "--progress auto --batch 32 --steps 2000 --strategy allreduce"));
  const std::regex pid_line("rank " + std::to_string(victim) + " of 4, pid ([0-9]+)");
  pid_t pid = -1;
  bool training = false;
  // The pid, then the first progress line, within kStartBound (under TSan 60 s of wall time can
  // be too few for four ranks beside another test).
  fast::testing::poll_until(
      [&] {
        const std::string text = slurp(s.log);
        std::smatch m;
        if (pid < 0 && std::regex_search(text, m, pid_line)) pid = static_cast<pid_t>(std::stol(m[1]));
        training = text.find("epoch 1 | step") != std::string::npos;
        return pid > 0 && training;
      },
      fast::testing::kStartBound, std::chrono::milliseconds(10));
  if (pid < 0 || !training) wait_or_kill_group(s, 0);
  ASSERT_GT(pid, 0) << slurp(s.log);
  ASSERT_TRUE(training) << slurp(s.log);
  std::this_thread::sleep_for(std::chrono::milliseconds(200 + random() % 500));
  kill(pid, SIGKILL);
  const int status = wait_or_kill_group(s, 30);
  const std::string log = slurp(s.log);
  ASSERT_NE(status, -1) << "mpirun did not end within 30 s of the kill:\n" << log;
  EXPECT_FALSE(exited_cleanly(status)) << log;
  for (int r = 0; r < 4; ++r) {
    if (r == victim) continue;
    const std::string notice = "mpi runtime, rank " + std::to_string(r) + ": ended by the MPI launcher";
    EXPECT_NE(log.find(notice), std::string::npos) << "no notice of rank " << r << ":\n" << log;
  }
  EXPECT_FALSE(fs::exists(dir / "s.json"));
  fs::remove_all(dir);
}

// Three kill moments (seeds): the first in every `make test`, the others labelled long.
INSTANTIATE_TEST_SUITE_P(Seeds, MpiFault, ::testing::Range(1, 2));
INSTANTIATE_TEST_SUITE_P(LongSeeds, MpiFault, ::testing::Range(2, 4));

// Ranks started with other settings (an MPMD mpirun: --steps, --batch on rank 1) would call other
// collectives than rank 0, which MPI's own turn into a crash or a hang: every rank ends with exit
// code 2 before any worker starts, rank 1 naming the setting and both values.
TEST(MpiOptions, RanksOfOtherSettingsAreRefusedBeforeAnyWorkerStarts) {
  const fs::path dir = fast::testing::test_dir("fast_mpi_cli", "settings");
  for (const auto& [flag, expected] :
       {std::pair<std::string, std::string>{"--steps 320", "steps = 320 in rank 1, 300 in rank 0"},
        std::pair<std::string, std::string>{"--batch 32", "batch = 32 in rank 1, 64 in rank 0"}}) {
    const std::string rank = kFast + " train --runtime mpi" + kTrain + "--progress never --steps 300";
    const Started s = start(dir, "mpirun --oversubscribe -np 1 " + rank + " : -np 1 " + rank + " " + flag);
    const int status = wait_or_kill_group(s, 120);
    const std::string log = slurp(s.log);
    ASSERT_NE(status, -1) << flag << ": mpirun did not end\n" << log;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == exit_code::bad_input) << flag << "\n" << log;
    EXPECT_NE(log.find("mpi runtime: rank 1 was started with other settings than rank 0: " + expected +
                       " (every rank of a run takes the same settings)"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("mpi runtime: rank(s) 1 were started with other settings than rank 0"), std::string::npos)
        << log;
    EXPECT_EQ(log.find("step 1/"), std::string::npos) << log;
  }
  if (!HasFailure()) fs::remove_all(dir);
}

// Bad input fails before MPI starts anything: an unknown collectives choice, and native
// collectives on a runtime that has none.
TEST(MpiOptions, CollectivesChoiceIsChecked) {
  const auto bad = fast::testing::run_fast_in("", "train --runtime threads --collectives ring --steps 1");
  EXPECT_NE(bad.code, exit_code::ok);
  EXPECT_NE(bad.output.find("collectives"), std::string::npos) << bad.output;
  const auto none = fast::testing::run_fast_in("", "train --runtime threads --collectives native --steps 1");
  EXPECT_NE(none.code, exit_code::ok);
  EXPECT_NE(none.output.find("the threads runtime has no native collectives"), std::string::npos) << none.output;
}

// The same for where windows run (FAST_WINDOWS, --windows): an unknown choice, and MPI RMA on a
// runtime without one-sided memory.
TEST(MpiOptions, WindowsChoiceIsChecked) {
  const std::string fast = std::string(FAST_TEST_BIN_DIR) + "/fast train --runtime threads --steps 1 2>&1";
  const auto bad = fast::testing::run_command("FAST_WINDOWS=shared " + fast);
  EXPECT_NE(bad.code, exit_code::ok);
  EXPECT_NE(bad.output.find("environment variable FAST_WINDOWS: expected service or rma, got 'shared'"),
            std::string::npos)
      << bad.output;
  const auto none = fast::testing::run_command("FAST_WINDOWS=rma " + fast);
  EXPECT_NE(none.code, exit_code::ok);
  EXPECT_NE(none.output.find("the threads runtime has no one-sided memory"), std::string::npos) << none.output;
  const auto flag = fast::testing::run_fast_in("", "train --runtime threads --windows rdma --steps 1");
  EXPECT_NE(flag.code, exit_code::ok);
  EXPECT_NE(flag.output.find("windows"), std::string::npos) << flag.output;
  const auto flag_none = fast::testing::run_fast_in("", "train --runtime threads --windows rma --steps 1");
  EXPECT_NE(flag_none.code, exit_code::ok);
  EXPECT_NE(flag_none.output.find("the threads runtime has no one-sided memory"), std::string::npos)
      << flag_none.output;
}

}  // namespace
