#pragma once
// LogLimit: a rate limit for log lines that an outsider can cause at will (refused connections,
// dropped frames): at most `burst` lines per `window`; the lines beyond are counted, and the first
// line of a later window is preceded by one that says how many were not shown. A flood of hostile
// connections thus costs a few lines per window, not one per connection, and none is hidden
// without a count.
//
// Thread-safety: every member may be called from any thread (a mutex guards the counts).

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fast/core/log.hpp"

namespace fast::runtime::zmq {

class LogLimit {
 public:
  using Clock = std::chrono::steady_clock;

  // burst >= 1 lines per window (> 0).
  LogLimit(int burst, Clock::duration window, std::string what)
      : burst_(burst), window_(window), what_(std::move(what)) {}

  // The lines to write for `line` at `now` (non-decreasing): none when the window's burst is spent
  // (the line is counted), else the count of the lines not shown since (when any), then `line`.
  std::vector<std::string> admit(std::string line, Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (shown_ == 0 || now - start_ >= window_) {
      start_ = now;
      shown_ = 0;
    }
    if (shown_ >= burst_) {
      ++hidden_;
      return {};
    }
    std::vector<std::string> out;
    if (hidden_ > 0)
      out.push_back(fmt::format("{}: {} more not shown (at most {} per {} s)", what_, hidden_, burst_,
                                std::chrono::duration<double>(window_).count()));
    hidden_ = 0;
    ++shown_;
    out.push_back(std::move(line));
    return out;
  }

  // admit() at the current time, each line written with core::log_line at `level`.
  void log(core::LogLevel level, std::string line) {
    if (level > core::log_level()) return;
    for (const std::string& l : admit(std::move(line), Clock::now())) core::log_line(level, l);
  }

  // Lines counted and not shown yet.
  std::uint64_t hidden() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return hidden_;
  }

 private:
  int burst_;
  Clock::duration window_;
  std::string what_;
  Clock::time_point start_{};
  int shown_ = 0;
  std::uint64_t hidden_ = 0;
  mutable std::mutex mutex_;
};

// The limits of the zmq runtime's lines about what outsiders send: 20 lines per 10 s each, enough
// to name each of a handful of intruders, few against a flood.
inline LogLimit& refused_connections_log() {
  static LogLimit limit(20, std::chrono::seconds(10), "zmq runtime: refused connections");
  return limit;
}
inline LogLimit& dropped_frames_log() {
  static LogLimit limit(20, std::chrono::seconds(10), "zmq runtime: dropped frames");
  return limit;
}

}  // namespace fast::runtime::zmq
