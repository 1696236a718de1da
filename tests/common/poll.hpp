#pragma once
// poll_until, file_contains_within, first_match: the tests' wait for a condition that another
// process brings about (a line in its log, a step in its metrics), with a bound instead of a fixed
// sleep.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <thread>

#include "common/run_fast.hpp"

namespace fast::testing {

// Calls `done()` every `period` until it returns true (then true) or `seconds` pass (then false).
// `done` runs on the calling thread; it is called at least once.
template <typename Done>
bool poll_until(Done done, double seconds, std::chrono::milliseconds period = std::chrono::milliseconds(50)) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(period);
  }
}

// Whether `text` appears in the file `file` within `seconds`, polled every `period` (the file is read whole each
// time; a missing file reads as empty).
inline bool file_contains_within(const std::filesystem::path& file, std::string_view text, double seconds,
                                 std::chrono::milliseconds period = std::chrono::milliseconds(50)) {
  return poll_until([&] { return slurp(file).find(text) != std::string::npos; }, seconds, period);
}

// Whether every one of `texts` appears in the file `file` within `seconds`, polled every `period`.
inline bool file_contains_all_within(const std::filesystem::path& file, std::initializer_list<std::string_view> texts,
                                     double seconds, std::chrono::milliseconds period = std::chrono::milliseconds(50)) {
  return poll_until(
      [&] {
        const std::string text = slurp(file);
        for (std::string_view t : texts)
          if (text.find(t) == std::string::npos) return false;
        return true;
      },
      seconds, period);
}

// The first group of `pattern` in the file `file` once it appears there, polled every 10 ms for at
// most `seconds`; nullopt when it did not appear in time.
inline std::optional<std::string> first_match(const std::filesystem::path& file, const std::regex& pattern,
                                              double seconds) {
  std::optional<std::string> found;
  poll_until(
      [&] {
        std::smatch m;
        const std::string text = slurp(file);
        if (std::regex_search(text, m, pattern)) found = m[1].str();
        return found.has_value();
      },
      seconds, std::chrono::milliseconds(10));
  return found;
}

// The pid of process `rank` of a `fast launch` whose output goes to `log`, from its "[rank] ... pid
// P listens on" line, once it appears within `seconds`; -1 when it did not.
inline pid_t launched_pid(const std::filesystem::path& log, int rank, double seconds) {
  const std::regex line("\\[" + std::to_string(rank) + "\\][^\\n]*pid ([0-9]+) listens on");
  const std::optional<std::string> pid = first_match(log, line, seconds);
  return pid ? static_cast<pid_t>(std::stol(*pid)) : -1;
}

}  // namespace fast::testing
