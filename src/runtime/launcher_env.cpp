// What the launchers' signatures share (runtime/detect.hpp): the environment lookup and the parse of
// a launcher's integer variable. In fast_runtime_base, below the backends that declare signatures.
#include <cctype>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/runtime/detect.hpp"

namespace fast::runtime {

Environment process_environment() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

int launcher_integer(const char* name, const char* value, int low, int high) {
  const std::string text = value != nullptr ? value : "";
  long long parsed = 0;
  std::size_t used = 0;
  bool ok = !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-');
  if (ok) {
    try {
      parsed = std::stoll(text, &used);
    } catch (...) {
      ok = false;
    }
  }
  ok = ok && used == text.size() && parsed >= low && parsed <= high;
  FAST_ENFORCE(ok, "environment variable {}: expected an integer in [{}, {}], got '{}'", name, low, high, text);
  return static_cast<int>(parsed);
}

std::string launcher_evidence(const Environment& env, std::initializer_list<const char*> names) {
  std::string out;
  for (const char* name : names) {
    const char* v = env(name);
    if (v == nullptr) continue;
    if (!out.empty()) out += ' ';
    out += fmt::format("{}={}", name, v);
  }
  return out;
}

}  // namespace fast::runtime
