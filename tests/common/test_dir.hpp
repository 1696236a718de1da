#pragma once
// Per-process temporary folders for tests: <tmp>/<prefix>_<pid>/<name>, removed with what they
// hold when the test process exits and none of its tests failed (a failed test's files stay for a
// look); and the zmq runtime's socket files of processes a test killed.

#include <sys/types.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <system_error>

namespace fast::testing {

// The per-process folders test_dir() made, removed with what they hold when the test process
// exits and none of its tests failed (a failed test's files stay for a look).
struct TestDirParents {
  std::set<std::filesystem::path> parents;
  ~TestDirParents() {
    if (::testing::UnitTest::GetInstance()->Failed()) return;
    for (const auto& p : parents) {
      std::error_code ec;
      std::filesystem::remove_all(p, ec);
    }
  }
};

// <tmp>/<prefix>_<pid>/<name>, created. The <prefix>_<pid> folder goes at exit unless a test of
// the process failed.
inline std::filesystem::path test_dir(const std::string& prefix, const std::string& name) {
  static TestDirParents made;
  const std::filesystem::path parent =
      std::filesystem::temp_directory_path() / (prefix + "_" + std::to_string(::getpid()));
  const std::filesystem::path dir = parent / name;
  std::filesystem::create_directories(dir);
  made.parents.insert(parent);
  return dir;
}

// The zmq runtime's ipc socket file of a process that ended (<tmp>/fast-<pid>-<random>.sock): one
// that was killed could not remove it.
inline void remove_socket_files(pid_t pid) {
  const std::string prefix = "fast-" + std::to_string(pid) + "-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::temp_directory_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(prefix) && name.ends_with(".sock")) std::filesystem::remove(entry.path(), ec);
  }
}

// Removes the socket file of a process the test kills, when it goes out of scope (after the test
// reaped the process).
struct RemovesSocketFiles {
  pid_t pid;
  ~RemovesSocketFiles() { remove_socket_files(pid); }
};

}  // namespace fast::testing
