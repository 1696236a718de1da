#pragma once
// What the tests of `fast launch` (launch_test.cpp, launch_restart_test.cpp) share: `fast ARGS...`
// started as a child process with its stdout and stderr in files, waited for within a bound and
// killed past it, and the checks by pid that no process it started survives.

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/run_fast.hpp"

namespace fast::testing::launch_cli {

namespace fs = std::filesystem;
namespace exit_code = fast::core::exit_code;
using Clock = std::chrono::steady_clock;

inline fs::path temp_dir(const std::string& name) { return fast::testing::test_dir("fast_launch_test", name); }

inline std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Whether pid is a live process (not a zombie).
inline bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] != 'Z';
}

// A running `fast ARGS...` whose stdout/stderr go to files in dir.
struct FastRun {
  pid_t pid = -1;
  fs::path out, err;
  Clock::time_point start;
};

struct FastDone {
  int code = -1;  // exit code; -1 if it had to be killed or died by a signal
  std::string out, err;
  double seconds = 0;
};

inline FastRun start_fast(const fs::path& dir, const std::vector<std::string>& args) {
  FastRun run{-1, dir / "stdout.txt", dir / "stderr.txt", Clock::now()};
  std::vector<std::string> argv = {std::string(FAST_TEST_BIN_DIR) + "/fast"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  run.pid = ::fork();
  if (run.pid == 0) {
    const int out = ::open(run.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(run.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (::chdir(dir.c_str()) != 0 || out < 0 || err < 0) ::_exit(126);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    ::execv(cargv[0], cargv.data());
    ::_exit(exit_code::cannot_exec);
  }
  return run;
}

// Waits up to limit_s for run to end; kills it (and so its children) if it does not.
inline FastDone wait_fast(const FastRun& run, double limit_s = 30) {
  FastDone done;
  int status = 0;
  for (;;) {
    if (::waitpid(run.pid, &status, WNOHANG) == run.pid) break;
    if (Clock::now() - run.start > std::chrono::duration<double>(limit_s)) {
      ADD_FAILURE() << "fast ran past " << limit_s << " s; killed";
      ::kill(run.pid, SIGKILL);
      ::waitpid(run.pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  done.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  done.seconds = std::chrono::duration<double>(Clock::now() - run.start).count();
  done.out = read_text(run.out);
  done.err = read_text(run.err);
  return done;
}

inline FastDone run_fast(const std::string& name, const std::vector<std::string>& args, double limit_s = 30) {
  return wait_fast(start_fast(temp_dir(name), args), limit_s);
}

// Waits until file holds `count` occurrences of part (false after limit_s).
inline bool wait_for_text(const fs::path& file, const std::string& part, int count, double limit_s = 20) {
  const auto end = Clock::now() + std::chrono::duration<double>(limit_s);
  while (Clock::now() < end) {
    const std::string text = read_text(file);
    int n = 0;
    for (auto pos = text.find(part); pos != std::string::npos; pos = text.find(part, pos + 1)) ++n;
    if (n >= count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The pids printed as "[rank] pid=P" lines.
inline std::vector<pid_t> printed_pids(const std::string& out) {
  std::vector<pid_t> pids;
  const std::regex re(R"(\[\d+\] pid=(\d+))");
  for (const std::string& line : lines_of(out)) {
    std::smatch m;
    if (std::regex_match(line, m, re)) pids.push_back(static_cast<pid_t>(std::stol(m[1])));
  }
  return pids;
}

inline void expect_none_alive(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) EXPECT_FALSE(alive(pid)) << "process " << pid << " survived fast launch";
}

inline std::vector<std::string> launch_sh(std::vector<std::string> options, const std::string& script) {
  options.insert(options.begin(), "launch");
  for (const char* a : {"--", "sh", "-c"}) options.push_back(a);
  options.push_back(script);
  return options;
}

}  // namespace fast::testing::launch_cli
