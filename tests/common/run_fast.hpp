#pragma once
// Runs the `fast` command built in this tree (FAST_TEST_BIN_DIR) for the CLI tests, and a fresh
// per-process temporary folder to run it in.

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/test_dir.hpp"
#include "fast/core/exit_code.hpp"

namespace fast::testing {

// The whole content of a file ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// How many times `what` occurs in `text` (overlapping occurrences count).
inline int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// `s` with every character but letters and digits replaced by '_' (a folder or test name).
inline std::string dir_name(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

struct FastResult {
  int code;            // exit code (fast/core/exit_code.hpp), -1 if the command did not exit normally
  std::string output;  // stdout and stderr
};

// A shell command line; its stdout (add 2>&1 for stderr too) and exit code.
inline FastResult run_command(const std::string& command) {
  FastResult r{-1, ""};
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe) != nullptr) r.output += buf.data();
  const int status = ::pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// `fast ARGS`, run in `dir` when it is not empty.
inline FastResult run_fast_in(const std::filesystem::path& dir, const std::string& args) {
  std::string command = std::string(FAST_TEST_BIN_DIR) + "/fast " + args + " 2>&1";
  if (!dir.empty()) command = "cd '" + dir.string() + "' && " + command;
  return run_command(command);
}

}  // namespace fast::testing
