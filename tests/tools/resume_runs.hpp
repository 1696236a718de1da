#pragma once
// The `fast train` runs of the checkpoint and resume tests (resume_cli_test.cpp,
// periodic_resume_test.cpp): one command line per runtime (threads; zmq under fast launch; mpi
// under mpirun), run in a process group of its own, bounded in time and killed as a group; and the
// progress of a run read from its metrics file.

#include <sys/wait.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/poll.hpp"
#include "common/run_fast.hpp"
#include "common/spawned.hpp"

namespace fast::testing::resume_runs {

namespace fs = std::filesystem;
using nlohmann::json;

inline const std::string kFast = std::string(FAST_TEST_BIN_DIR) + "/fast";
inline const std::string kTrain = " --model mlp --batch 32 --seed 5 --eval-every 0 --progress never --summary s.json ";

// The command line of a `fast train ARGS` of `workers` workers under `runtime` (threads, sim, zmq, mpi).
inline std::string command(const std::string& runtime, const std::string& args, int workers = 2) {
  const std::string n = std::to_string(workers);
  const std::string limit = std::to_string(300 * fast::testing::kRunTimeScale);
  if (runtime == "zmq")
    return kFast + " launch -n " + n + " --timeout " + limit + " -- " + kFast + " train --runtime zmq" + kTrain + args;
  if (runtime == "mpi") return "mpirun -np " + n + " --oversubscribe " + kFast + " train --runtime mpi" + kTrain + args;
  return kFast + " train --runtime " + runtime + " --workers " + n + kTrain + args;  // threads, sim
}

struct Ran {
  int status = -1;  // wait status; -1: killed after the time limit
  std::string log;
  json summary;  // s.json, or null
};

// mpirun as root, and with time for a graceful stop: with OpenMPI's default odls_base_sigkill_timeout
// (1 s) a rank still stopping on a loaded machine is SIGKILLed (docs/faults.md, "Interrupting a
// run"); 3 s delays the ranks' SIGTERM too (measured: about 5 s after mpirun's).
inline void mpirun_environment() {
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  ::setenv("OMPI_MCA_odls_base_sigkill_timeout", "3", 1);
  fast::testing::private_mpi_session_base();
}

inline Ran run(const fs::path& dir, const std::string& runtime, const std::string& args, int workers = 2) {
  mpirun_environment();
  fs::remove(dir / "s.json");
  const auto s = fast::testing::spawn_in_group(dir, command(runtime, args, workers));
  Ran r;
  r.status = fast::testing::wait_or_kill_group(s, 300 * fast::testing::kRunTimeScale);
  r.log = slurp(s.log);
  if (fs::exists(dir / "s.json")) r.summary = json::parse(slurp(dir / "s.json"));
  return r;
}

inline bool ok(const Ran& r) { return r.status != -1 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0; }

inline std::vector<std::string> runtimes() {
  std::vector<std::string> out{"threads"};
#ifdef FAST_TEST_ZMQ
  out.push_back("zmq");
#endif
#ifdef FAST_TEST_MPI
  out.push_back("mpi");
#endif
  return out;
}

// The mean, over the workers with train records in the metrics files `files` (a run's one file, or
// each process's), of each one's latest logged step (0 before any record). A line still being
// written is skipped; a file not written yet counts no worker.
inline double mean_latest_step(const std::vector<fs::path>& files) {
  std::map<int, std::int64_t> latest;
  for (const fs::path& file : files) {
    if (!fs::exists(file)) continue;
    std::istringstream lines(slurp(file));
    for (std::string line; std::getline(lines, line);) {
      if (line.find("\"event\":\"train\"") == std::string::npos) continue;
      const json record = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (record.is_discarded() || !record.contains("worker") || !record.contains("step")) continue;
      std::int64_t& step = latest[record["worker"].get<int>()];
      step = std::max(step, record["step"].get<std::int64_t>());
    }
  }
  double sum = 0;
  for (const auto& [worker, step] : latest) sum += static_cast<double>(step);
  return latest.empty() ? 0.0 : sum / static_cast<double>(latest.size());
}

// Polls `files` until mean_latest_step reaches `step` or `seconds` pass.
inline bool wait_for_mean_step(const std::vector<fs::path>& files, double step, double seconds) {
  return fast::testing::poll_until([&] { return mean_latest_step(files) >= step; }, seconds);
}

}  // namespace fast::testing::resume_runs
