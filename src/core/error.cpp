#include "fast/core/error.hpp"

#include <regex>

#include "fast/core/env.hpp"

namespace fast::core {

std::string user_message(const std::exception& e) {
  static const std::regex location(R"( \([^\s()]+\.(cpp|hpp|h):[0-9]+: check '.*?' failed\))");
  if (env_string("FAST_LOG_LEVEL") == "debug") return e.what();
  return std::regex_replace(std::string(e.what()), location, "");
}

}  // namespace fast::core
