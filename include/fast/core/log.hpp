#pragma once
// Line-oriented logging on stderr. Each call writes one whole line with one write, so lines of
// concurrent workers do not interleave. The level comes from FAST_LOG_LEVEL (read once). A line
// that quotes an error's text loses its build-file locations, as core::user_message does.

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace fast::core {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

LogLevel log_level();
void set_log_level(LogLevel level);
void log_line(LogLevel level, std::string_view message);

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (level <= log_level()) log_line(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace fast::core
