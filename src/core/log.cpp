#include "fast/core/log.hpp"

#include <unistd.h>
#include <atomic>
#include <cstdio>

#include "fast/core/env.hpp"
#include "fast/core/error.hpp"

namespace fast::core {

namespace {
LogLevel parse_level() {
  const std::string text = env_string("FAST_LOG_LEVEL");
  if (text == "error") return LogLevel::error;
  if (text == "warn") return LogLevel::warn;
  if (text == "info") return LogLevel::info;
  if (text == "debug") return LogLevel::debug;
  FAST_THROW(InvalidArgument, "environment variable FAST_LOG_LEVEL: expected one of error, warn, info, debug; got '{}'",
             text);
}

std::atomic<int>& level_slot() {
  static std::atomic<int> slot{static_cast<int>(parse_level())};
  return slot;
}

constexpr std::string_view kNames[] = {"error", "warn", "info", "debug"};
}  // namespace

LogLevel log_level() { return static_cast<LogLevel>(level_slot().load(std::memory_order_relaxed)); }
void set_log_level(LogLevel level) { level_slot().store(static_cast<int>(level), std::memory_order_relaxed); }

void log_line(LogLevel level, std::string_view message) {
  // A message that quotes an error's text names no build file (core::user_message).
  const std::string line =
      fmt::format("[fast {}] {}\n", kNames[static_cast<int>(level)], without_check_locations(message));
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace fast::core
