#include "fast/core/env.hpp"

#include <array>
#include <cstdlib>

#include "fast/core/error.hpp"
#include "fast/core/parse.hpp"

namespace fast::core {

namespace {
constexpr std::array kTable{
    EnvVar{"FAST_LOG_LEVEL", EnvType::string, "info", "Log verbosity on stderr: error, warn, info or debug."},
    EnvVar{"FAST_MALLOC", EnvType::string, "tuned",
           "tuned: `fast train` keeps malloc blocks of every size in the heap between steps (fewer page faults; "
           "docs/benchmarks.md, \"malloc thresholds\"); system: glibc's own behaviour."},
};

const EnvVar& lookup(EnvTable table, std::string_view name) {
  for (const EnvVar& v : table)
    if (v.name == name) return v;
  FAST_THROW(InvalidUsage, "environment variable {} is not in the table it was read from", name);
}
}  // namespace

std::span<const EnvVar> env_table() { return kTable; }

std::string_view env_type_name(EnvType type) {
  switch (type) {
    case EnvType::string: return "string";
    case EnvType::integer: return "integer";
    case EnvType::number: return "number";
    case EnvType::path: return "path";
  }
  return "?";
}

std::string env_string(EnvTable table, std::string_view name) {
  const EnvVar& v = lookup(table, name);
  const char* set = std::getenv(std::string(v.name).c_str());
  return set != nullptr ? std::string(set) : std::string(v.default_value);
}

long long env_int(EnvTable table, std::string_view name) {
  const EnvVar& v = lookup(table, name);
  FAST_ENFORCE_AS(InvalidUsage, v.type == EnvType::integer, "environment variable {} is not an integer", name);
  return parse_int<long long>(env_string(table, name), fmt::format("environment variable {}", name), v.min, v.max);
}

double env_number(EnvTable table, std::string_view name) {
  const std::string text = env_string(table, name);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  FAST_ENFORCE(!text.empty() && end == text.c_str() + text.size(),
               "environment variable {}: expected a number, got '{}'", name, text);
  return value;
}

std::string env_string(std::string_view name) { return env_string(env_table(), name); }
long long env_int(std::string_view name) { return env_int(env_table(), name); }
double env_number(std::string_view name) { return env_number(env_table(), name); }

}  // namespace fast::core
