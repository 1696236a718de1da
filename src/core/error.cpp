#include "fast/core/error.hpp"

#include <regex>

#include "fast/core/env.hpp"

namespace fast::core {

std::string without_check_locations(std::string_view text) {
  static const std::regex location(R"( \([^\s()]+\.(cpp|hpp|h):[0-9]+: check '.*?' failed\))");
  if (env_string("FAST_LOG_LEVEL") == "debug" || text.find(": check '") == std::string_view::npos)
    return std::string(text);
  return std::regex_replace(std::string(text), location, "");
}

std::string user_message(const std::exception& e) { return without_check_locations(e.what()); }

}  // namespace fast::core
