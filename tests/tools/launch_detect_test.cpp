// `fast train` finds its world from the launcher that started it (docs/launch.md, runtime/detect.hpp),
// without --runtime: two processes of `fast launch`, of `mpirun -np 2` and of torchrun's variables set
// by hand each train ONE run of 2 workers, ending with the parameters of `--workers 2` under threads
// (param_hash, bit for bit); each process's first line names the launcher. A contradiction
// (--runtime threads under 2 processes, --workers 4 under a launcher, torchrun without keys) is
// refused with exit code 2 before training. A single process says so, and its metrics' start record
// and summary carry the version and commit `fast --version` prints. Every command is bounded in
// time and killed as a group.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <string>

#include "common/run_fast.hpp"
#include "common/spawned.hpp"
#include "fast/runtime/zmq/ports.hpp"

namespace {

namespace fs = std::filesystem;
namespace exit_code = fast::core::exit_code;
using fast::testing::count_of;
using fast::testing::slurp;
using nlohmann::json;

const std::string kFast = std::string(FAST_TEST_BIN_DIR) + "/fast";
const std::string kTrain = " --model mlp --seed 11 --steps 20 --batch 32 --eval-every 0 --progress never ";
constexpr double kRunBound = 300 * fast::testing::kRunTimeScale;

// `script` (a shell script) run in dir in a process group; its exit status, or -1 when it had to be killed.
int run_script(const fs::path& dir, const std::string& script, const std::string& log) {
  {
    std::ofstream f(dir / (log + ".sh"));
    f << script;
  }
  const auto s = fast::testing::spawn_in_group(dir, "sh " + log + ".sh", log);
  const int status = fast::testing::wait_or_kill_group(s, kRunBound);
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

json summary_of(const fs::path& file) {
  const std::string text = slurp(file);
  return text.empty() ? json::object() : json::parse(text);
}

// The summary of `fast train --runtime threads --workers 2` with kTrain.
json threads_run(const fs::path& dir) {
  const auto r = fast::testing::run_fast_in(dir, "train --runtime threads --workers 2 --summary t.json" + kTrain);
  EXPECT_EQ(r.code, exit_code::ok) << r.output;
  return summary_of(dir / "t.json");
}

// `output` (of every process of the run) has one "final test accuracy" line, the process of worker
// 0's, and it reports 2 workers.
void expect_one_run_of_two_workers(const std::string& output) {
  const std::regex final_line("final test accuracy: [0-9.]+ \\([a-z-]+, ([0-9]+) workers");
  int lines = 0;
  for (auto it = std::sregex_iterator(output.begin(), output.end(), final_line); it != std::sregex_iterator(); ++it) {
    EXPECT_EQ((*it)[1], "2") << output;
    ++lines;
  }
  EXPECT_EQ(lines, 1) << output;
}

TEST(LaunchDetect, FastLaunchWithoutRuntimeTrainsOneRunOfTwoWorkers) {
  const fs::path dir = fast::testing::test_dir("fast_launch_detect", "launch");
  const json t = threads_run(dir);
  const int code = run_script(
      dir, kFast + " launch -n 2 --timeout 240 -- " + kFast + " train --summary z.json" + kTrain, "launch.log");
  const std::string out = slurp(dir / "launch.log");
  ASSERT_EQ(code, 0) << out;
  const json z = summary_of(dir / "z.json");
  ASSERT_TRUE(t.contains("param_hash")) << t.dump();
  EXPECT_EQ(z["param_hash"], t["param_hash"]) << "launch " << z.dump() << "\nthreads " << t.dump();
  EXPECT_EQ(z["workers"], 2);
  EXPECT_EQ(z["runtime"], "zmq");
  EXPECT_EQ(count_of(out, "fast train: launcher: fast launch"), 2) << out;
  EXPECT_EQ(count_of(out, "runtime zmq (implied)"), 2) << out;
  expect_one_run_of_two_workers(out);
  EXPECT_EQ(count_of(out, "summary: z.json"), 1) << out;  // by the process that wrote it
  fs::remove_all(dir);
}

#if FAST_TEST_MPI
TEST(LaunchDetect, MpirunWithoutRuntimeTrainsOneRunOfTwoWorkers) {
  const fs::path dir = fast::testing::test_dir("fast_launch_detect", "mpirun");
  const json t = threads_run(dir);
  fast::testing::private_mpi_session_base();
  // FAST's collectives: the bit-for-bit comparison with threads (MPI's own sum in another order).
  const int code = run_script(dir,
                              "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 exec mpirun -np 2 "
                              "--oversubscribe " +
                                  kFast + " train --collectives fast --summary m.json" + kTrain,
                              "mpirun.log");
  const std::string out = slurp(dir / "mpirun.log");
  ASSERT_EQ(code, 0) << out;
  const json m = summary_of(dir / "m.json");
  EXPECT_EQ(m["param_hash"], t["param_hash"]) << "mpirun " << m.dump() << "\nthreads " << t.dump();
  EXPECT_EQ(m["workers"], 2);
  EXPECT_EQ(m["runtime"], "mpi");
  EXPECT_EQ(count_of(out, "fast train: launcher: mpirun (OpenMPI)"), 2) << out;
  expect_one_run_of_two_workers(out);
  fs::remove_all(dir);
}
#endif

// Two `fast train` processes with torchrun's variables (and FAST_INSECURE=1, or none), started by a
// shell script that waits for both; extra: more arguments of fast train.
std::string torchrun_script(int port, bool insecure, const std::string& extra) {
  std::string script;
  for (int rank = 0; rank < 2; ++rank) {
    script += "RANK=" + std::to_string(rank) + " LOCAL_RANK=" + std::to_string(rank) +
              " WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) +
              (insecure ? " FAST_INSECURE=1 " : " ") + kFast + " train" + kTrain + extra + " > r" +
              std::to_string(rank) + ".log 2>&1 &\np" + std::to_string(rank) + "=$!\n";
  }
  return script + "wait $p0; c0=$?\nwait $p1; c1=$?\necho \"exit $c0 $c1\"\n[ $c0 -eq 0 ] && [ $c1 -eq 0 ]\n";
}

TEST(LaunchDetect, TorchrunVariablesTrainOneRunOfTwoWorkers) {
  const fs::path dir = fast::testing::test_dir("fast_launch_detect", "torchrun");
  const json t = threads_run(dir);
  const int port = fast::runtime::zmq::free_loopback_port();
  const int code = run_script(dir, torchrun_script(port, true, " --summary r.json"), "torchrun.log");
  const std::string out = slurp(dir / "r0.log") + slurp(dir / "r1.log");
  ASSERT_EQ(code, 0) << slurp(dir / "torchrun.log") << out;
  const json r = summary_of(dir / "r.json");
  EXPECT_EQ(r["param_hash"], t["param_hash"]) << "torchrun " << r.dump() << "\nthreads " << t.dump();
  EXPECT_EQ(r["workers"], 2);
  EXPECT_EQ(r["runtime"], "zmq");
  EXPECT_EQ(count_of(out, "fast train: launcher: torchrun"), 2) << out;
  EXPECT_EQ(count_of(out, "rendezvous 127.0.0.1:" + std::to_string(port)), 2) << out;
  expect_one_run_of_two_workers(out);
  fs::remove_all(dir);
}

TEST(LaunchDetect, TorchrunWithoutKeysIsRefusedNamingInsecure) {
  const fs::path dir = fast::testing::test_dir("fast_launch_detect", "torchrun_keys");
  const int code = run_script(dir, torchrun_script(fast::runtime::zmq::free_loopback_port(), false, ""), "keys.log");
  EXPECT_NE(code, 0);
  for (const char* log : {"r0.log", "r1.log"}) {
    const std::string out = slurp(dir / log);
    EXPECT_NE(out.find("fast: error: key: torchrun"), std::string::npos) << out;
    EXPECT_NE(out.find("--insecure"), std::string::npos) << out;
    EXPECT_EQ(out.find("final test accuracy"), std::string::npos) << out;
  }
  EXPECT_NE(slurp(dir / "keys.log").find("exit 2 2"), std::string::npos) << slurp(dir / "keys.log");
  fs::remove_all(dir);
}

// A contradiction under `fast launch -n 2`: exit code 2 and the message, before any training.
void expect_refused(const std::string& name, const std::string& args, const std::string& message) {
  const fs::path dir = fast::testing::test_dir("fast_launch_detect", name);
  const int code =
      run_script(dir, kFast + " launch -n 2 --timeout 120 -- " + kFast + " train" + kTrain + args, name + ".log");
  const std::string out = slurp(dir / (name + ".log"));
  EXPECT_EQ(code, exit_code::bad_input) << out;
  EXPECT_EQ(count_of(out, message), 2) << out;
  EXPECT_EQ(out.find("final test accuracy"), std::string::npos) << out;
  fs::remove_all(dir);
}

TEST(LaunchDetect, ThreadsUnderALauncherOfTwoProcessesIsRefused) {
  expect_refused("threads", "--runtime threads", "would train 2 independent copies");
}

TEST(LaunchDetect, WorkersIgnoredUnderALauncherAreRefused) {
  expect_refused("workers", "--workers 4", "workers: 4 workers asked for in this process");
}

TEST(LaunchDetect, ASingleProcessSaysSoAndRecordsItsVersion) {
  const fs::path dir = fast::testing::test_dir("fast_launch_detect", "single");
  const auto r = fast::testing::run_fast_in(
      dir, "train --steps 1 --model mlp --progress never --eval-every 0 --metrics m.jsonl --summary s.json");
  EXPECT_EQ(r.code, exit_code::ok) << r.output;
  EXPECT_EQ(r.output.rfind("fast train: launcher: none, a single process; runtime threads (the default)", 0), 0)
      << r.output;
  EXPECT_NE(r.output.find("allreduce, 2 workers (threads)"), std::string::npos) << r.output;  // the default count
  // `fast --version` prints "fast VERSION" or "fast VERSION (COMMIT)"; the start record and the summary
  // carry the same version and commit.
  const auto v = fast::testing::run_fast_in("", "--version");
  std::smatch m;
  const std::string line = v.output.substr(0, v.output.find('\n'));
  ASSERT_TRUE(std::regex_match(line, m, std::regex("fast ([0-9]+\\.[0-9]+\\.[0-9]+)(?: \\((.+)\\))?"))) << v.output;
  const json summary = summary_of(dir / "s.json");
  const std::string metrics = slurp(dir / "m.jsonl");
  const json start = json::parse(metrics.substr(0, metrics.find('\n')));
  ASSERT_EQ(start["event"], "start");
  for (const json& record : {summary, start}) {
    EXPECT_EQ(record["fast_version"], m[1].str()) << record.dump();
    if (m[2].matched)
      EXPECT_EQ(record["fast_commit"], m[2].str()) << record.dump();
    else
      EXPECT_FALSE(record.contains("fast_commit")) << record.dump();
  }
  fs::remove_all(dir);
}

}  // namespace
