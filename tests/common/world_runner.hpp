#pragma once
// Runs one worker function on a world of any runtime, for tests parameterised by runtime name
// (the conformance suite). threads and sim run in this process. zmq runs as `processes` child
// processes of this very test binary, each re-running the current test with FAST_TEST_CHILD=1 and
// the FAST_* rendezvous variables, as `fast launch` would set them; the parent waits for them at
// most `limit_seconds`, kills every one left by pid, and fails the test with their output when one
// did not end as expected. mpi runs the same way under one `mpirun -np N --oversubscribe` child,
// started in a process group of its own so that the parent can kill it and its ranks together.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/run_fast.hpp"
#include "common/test_dir.hpp"
#include "fast/runtime/launcher.hpp"
#if FAST_TEST_HAS_ZMQ
#include "fast/runtime/zmq/keys.hpp"
#include "fast/runtime/zmq/ports.hpp"
#endif

extern char** environ;

namespace fast::testing {

struct WorldCase {
  std::string runtime;    // threads | sim | zmq | mpi
  int workers = 2;        // in the whole world
  std::string transport;  // zmq: ipc | tcp
  int workers_per_process = 1;
  long long shm_bytes = -1;  // zmq: FAST_SHM_BYTES, the shared-memory ring per pair (0: none); -1: the default
  bool insecure = false;     // zmq: FAST_INSECURE=1, no CURVE: every frame's payload carries its checksum
  int seal_threads = -1;     // zmq: FAST_SEAL_THREADS, helpers sealing the streams' chunks; -1: the default
  int read_alongside = -1;   // zmq: FAST_READ_ALONGSIDE (1: the streams' threads read large messages alongside)
  int poll_us = -1;          // zmq: FAST_POLL_US (0: no waiter polls, the reader threads deliver); -1: the default
  std::string name() const {
    return runtime + (transport.empty() ? "" : "_" + transport) + "_" + std::to_string(workers) + "workers" +
           (workers_per_process > 1 ? "_" + std::to_string(workers_per_process) + "perprocess" : "") +
           (shm_bytes == 0  ? "_noshm"
            : shm_bytes > 0 ? "_shm" + std::to_string(shm_bytes >> 10) + "KiB"
                            : "") +
           (insecure ? "_insecure" : "") + (seal_threads >= 0 ? "_seal" + std::to_string(seal_threads) : "") +
           (read_alongside == 1 ? "_alongside" : "") + (poll_us >= 0 ? "_poll" + std::to_string(poll_us) : "");
  }
};

inline void PrintTo(const WorldCase& c, std::ostream* os) { *os << c.name(); }

inline bool is_test_child() { return std::getenv("FAST_TEST_CHILD") != nullptr; }

// How each child process is expected to end: exit code 0, or killed by `signal`.
using ExpectedEnd = std::map<int, int>;  // process rank -> signal (absent: exit 0)

struct Children {
  std::filesystem::path dir;  // the processes' logs and, unless insecure, the run's key pair (run.key) and allow-list
  std::vector<pid_t> pids;
  std::vector<std::filesystem::path> logs;
  bool process_group = false;     // each pid leads a process group, killed as a whole (mpirun and its ranks)
  std::size_t ranks_per_log = 1;  // tests each log must show passed (mpirun: one per rank)
};

#if FAST_TEST_HAS_ZMQ
inline Children spawn_children(const WorldCase& c, const std::map<std::string, std::string>& extra_env) {
  const int processes = c.workers / c.workers_per_process;
  static int worlds = 0;  // one folder per world of this test process
  const auto dir = std::filesystem::temp_directory_path() /
                   ("fast_world_" + std::to_string(::getpid()) + "_" + std::to_string(++worlds));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string filter = std::string("--gtest_filter=") + info->test_suite_name() + "." + info->name();
  std::map<std::string, std::string> env = {
      {"FAST_TEST_CHILD", "1"},
      {"FAST_RENDEZVOUS", "127.0.0.1:" + std::to_string(runtime::zmq::free_loopback_port())},
      {"FAST_WORLD_SIZE", std::to_string(processes)},
      {"FAST_TRANSPORT", c.transport},
      {"FAST_TEST_WORKERS_PER_PROCESS", std::to_string(c.workers_per_process)}};
  if (c.insecure) {
    env["FAST_INSECURE"] = "1";
  } else {  // one key pair for the whole world, the only key its allow-list admits
    const runtime::zmq::KeyPair keys = runtime::zmq::generate_key_pair();
    runtime::zmq::write_key_file(dir / "run.key", keys);
    runtime::zmq::write_allow_file(dir / "allow.txt", {{keys.public_key, "test"}});
    env["FAST_KEY_FILE"] = (dir / "run.key").string();
    env["FAST_ALLOW_FILE"] = (dir / "allow.txt").string();
  }
  if (c.shm_bytes >= 0) env["FAST_SHM_BYTES"] = std::to_string(c.shm_bytes);
  if (c.seal_threads >= 0) env["FAST_SEAL_THREADS"] = std::to_string(c.seal_threads);
  if (c.read_alongside >= 0) env["FAST_READ_ALONGSIDE"] = std::to_string(c.read_alongside);
  if (c.poll_us >= 0) env["FAST_POLL_US"] = std::to_string(c.poll_us);
  for (const auto& [k, v] : extra_env) env[k] = v;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (!env.count(key) && key != "FAST_PROCESS_RANK") env[key] = kv.substr(kv.find('=') + 1);
  }
  Children children;
  children.dir = dir;
  for (int p = 0; p < processes; ++p) {
    env["FAST_PROCESS_RANK"] = std::to_string(p);
    std::vector<std::string> strings;
    for (const auto& [k, v] : env) strings.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& s : strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
    std::string arg = filter;
    char* argv[] = {exe.data(), arg.data(), nullptr};
    children.logs.push_back(dir / ("process" + std::to_string(p) + ".log"));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, children.logs.back().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
      ADD_FAILURE() << "posix_spawn failed: " << rc;
    else
      children.pids.push_back(pid);
  }
  return children;
}
#else
inline Children spawn_children(const WorldCase&, const std::map<std::string, std::string>&) {
  ADD_FAILURE() << "this build has no zmq runtime (FAST_WITH_ZMQ=OFF)";
  return {};
}
#endif

// The environment of this process plus `env` (which wins), as posix_spawn wants it.
struct Environment {
  std::vector<std::string> strings;
  std::vector<char*> pointers;
  explicit Environment(const std::map<std::string, std::string>& env) {
    std::map<std::string, std::string> all = env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      const std::string key = kv.substr(0, kv.find('='));
      if (!all.count(key)) all[key] = kv.substr(kv.find('=') + 1);
    }
    for (const auto& [k, v] : all) strings.push_back(k + "=" + v);
    for (auto& text : strings) pointers.push_back(text.data());
    pointers.push_back(nullptr);
  }
};

// mpirun -np N --oversubscribe <this test binary> --gtest_filter=<this test>, in its own process
// group (children.pids holds the group leader: reap_children kills the group), its output in one log.
inline Children spawn_mpirun(const WorldCase& c, const std::map<std::string, std::string>& extra_env) {
  static int worlds = 0;
  Children children;
  children.dir = std::filesystem::temp_directory_path() /
                 ("fast_mpi_world_" + std::to_string(::getpid()) + "_" + std::to_string(++worlds));
  std::filesystem::remove_all(children.dir);
  std::filesystem::create_directories(children.dir);
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::map<std::string, std::string> env = {
      {"FAST_TEST_CHILD", "1"},
      {"OMPI_ALLOW_RUN_AS_ROOT", "1"},
      {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
      // OpenMPI's files under this world's own directory: mpiruns of parallel tests that share
      // /tmp/ompi.<host>.<uid> race to create it when the last one to end has removed it.
      {"OMPI_MCA_orte_tmpdir_base", children.dir.string()}};
  for (const auto& [k, v] : extra_env) env[k] = v;
  Environment environment(env);
  std::vector<std::string> args = {"mpirun",
                                   "-np",
                                   std::to_string(c.workers),
                                   "--oversubscribe",
                                   std::filesystem::read_symlink("/proc/self/exe").string(),
                                   std::string("--gtest_filter=") + info->test_suite_name() + "." + info->name(),
                                   "--gtest_color=no"};  // mpirun gives its ranks a terminal
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  children.logs.push_back(children.dir / "mpirun.log");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, children.logs.back().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, "mpirun", &actions, &attributes, argv.data(), environment.pointers.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0)
    ADD_FAILURE() << "cannot start mpirun: " << std::strerror(rc);
  else
    children.pids.push_back(pid);
  children.process_group = true;
  children.ranks_per_log = static_cast<std::size_t>(c.workers);
  return children;
}

// Waits for every child at most limit_seconds (then kills them all by pid); checks how each ended.
inline void reap_children(Children& children, const ExpectedEnd& expected, double limit_seconds) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(limit_seconds);
  std::vector<int> status(children.pids.size(), -1);
  std::size_t left = children.pids.size();
  while (left > 0 && clock::now() < deadline) {
    for (std::size_t i = 0; i < children.pids.size(); ++i)
      if (status[i] == -1) {
        int st = 0;
        if (::waitpid(children.pids[i], &st, WNOHANG) == children.pids[i]) {
          status[i] = st;
          --left;
        }
      }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::size_t i = 0; i < children.pids.size(); ++i) {
    std::string why;
    if (status[i] == -1) {
      ::kill(children.process_group ? -children.pids[i] : children.pids[i], SIGKILL);
      ::waitpid(children.pids[i], nullptr, 0);
      why = "did not end within the time limit (killed)";
    } else {
      const auto it = expected.find(static_cast<int>(i));
      const int want_signal = it == expected.end() ? 0 : it->second;
      if (want_signal == 0 && !(WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0))
        why = WIFEXITED(status[i]) ? "exited with " + std::to_string(WEXITSTATUS(status[i]))
                                   : "killed by signal " + std::to_string(WTERMSIG(status[i]));
      if (want_signal != 0 && !(WIFSIGNALED(status[i]) && WTERMSIG(status[i]) == want_signal))
        why = "expected to be killed by signal " + std::to_string(want_signal);
    }
    remove_socket_files(children.pids[i]);
    std::ifstream log(children.logs[i]);
    std::stringstream text;
    text << log.rdbuf();
    // A child that ran no test (a filter that matched nothing) must not pass for one that passed;
    // under mpirun every rank must have passed it.
    const auto passed = static_cast<std::size_t>(count_of(text.str(), "[  PASSED  ] 1 test."));
    if (why.empty() && !expected.count(static_cast<int>(i)) && passed < children.ranks_per_log)
      why = "ran no test or not on every rank (" + std::to_string(passed) + " of " +
            std::to_string(children.ranks_per_log) + " passed)";
    if (!why.empty()) {
      ADD_FAILURE() << "process " << i << " " << why << "; its output:\n" << text.str();
    }
  }
}

// Runs fn on every worker of a world of case c (see the top of this file). In a zmq child it runs
// this process's share and returns; in the zmq parent it spawns and reaps the children.
inline void run_world(const WorldCase& c, const runtime::WorkerFn& fn, runtime::LaunchOptions options = {},
                      const ExpectedEnd& expected = {}, const std::map<std::string, std::string>& env = {},
                      double limit_seconds = 120) {
  options.runtime = c.runtime;
  options.workers = c.workers;
  if (c.runtime != "zmq" && c.runtime != "mpi") {
    runtime::launch(options, fn);
    return;
  }
  if (is_test_child()) {
    if (c.runtime == "zmq")
      options.process.workers_per_process = std::atoi(std::getenv("FAST_TEST_WORKERS_PER_PROCESS"));
    runtime::launch(options, fn);
    return;
  }
  Children children = c.runtime == "mpi" ? spawn_mpirun(c, env) : spawn_children(c, env);
  reap_children(children, expected, limit_seconds);  // a failure prints the logs first
  std::filesystem::remove_all(children.dir);
}

}  // namespace fast::testing
