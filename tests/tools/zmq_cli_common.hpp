#pragma once
// What the multi-process tests of `fast launch -n 4 -- fast train --runtime zmq` share
// (zmq_cli_test.cpp, zmq_churn_test.cpp, elastic_growth_test.cpp): the commands and flags, the peer
// timeout, reading a launch's log for a process's pid and for training's start, and the
// environment of a running process (to start another like it).

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "common/poll.hpp"
#include "common/run_fast.hpp"
#include "common/spawned.hpp"

namespace fast::testing::zmq_cli {

inline const std::string kFast = std::string(FAST_TEST_BIN_DIR) + "/fast";
inline const std::string kTrain = " --model mlp --seed 11 --progress never --eval-every 0 ";
// The same, with the progress lines the fault tests wait for (auto: one line per tenth, not
// rewritten in place, since the output of fast launch is not a terminal).
inline const std::string kTrainShown = " --model mlp --seed 11 --progress auto --eval-every 0 ";

using Launched = fast::testing::Spawned;

// The --peer-timeout of the fault and churn tests, seconds: 2, twice that under ThreadSanitizer.
// There, with another multi-process test beside it on 2 cores, nine processes starting libtorch
// together can starve every heartbeat for 2 s before training begins, and each process would lose
// all the others; in the adpsgd churn test the same can happen when the killed worker's process
// starts again, every process losing every other at once.
inline constexpr int kPeerTimeout = 2 * fast::testing::kRunTimeScale;
inline const std::string kPeerTimeoutFlag = " --peer-timeout " + std::to_string(kPeerTimeout);

// `fast launch LAUNCH_FLAGS --timeout 300 -- fast train --runtime zmq TRAIN` started in `dir`, in a
// process group of its own (the bound twice that under TSan), its output in dir/launch.log.
inline Launched launch_zmq(const std::filesystem::path& dir, const std::string& launch_flags,
                           const std::string& train) {
  return fast::testing::spawn_in_group(dir,
                                       kFast + " launch " + launch_flags + " --timeout " +
                                           std::to_string(300 * fast::testing::kRunTimeScale) + " -- " + kFast +
                                           " train --runtime zmq " + train,
                                       "launch.log");
}

// pid of process `rank`, from its "[rank] ... pid P listens on" line, within kStartBound.
inline pid_t worker_pid(const Launched& l, int rank) {
  return fast::testing::launched_pid(l.log, rank, fast::testing::kStartBound);
}

// Whether `text` appears in the file `log` within kStartBound (polled every 10 ms).
inline bool appears(const std::filesystem::path& log, std::string_view text) {
  return fast::testing::file_contains_within(log, text, fast::testing::kStartBound, std::chrono::milliseconds(10));
}

// Whether worker 0 printed its first progress line within kStartBound: every process has passed the
// rendezvous and training runs.
inline bool training_started(const Launched& l) { return appears(l.log, "[0] epoch 1 | step"); }

// The environment of a running process (/proc/PID/environ): what an operator who starts it again
// gives the new one (its rank, the rendezvous, the key files).
inline std::vector<std::string> environment_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::vector<std::string> entries;
  std::string entry;
  while (std::getline(in, entry, '\0'))
    if (!entry.empty()) entries.push_back(entry);
  return entries;
}

// `text` quoted for /bin/sh.
inline std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace fast::testing::zmq_cli
