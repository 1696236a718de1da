#pragma once
// A count and its noun for messages: counted(1, "worker") is "1 worker", counted(3, "worker")
// "3 workers" (nouns whose plural adds an s: worker, process needs "es": pass the plural).
// Thread-safety: a pure function.

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace fast::core {

inline std::string counted(long long n, std::string_view singular, std::string_view plural = {}) {
  if (n == 1) return fmt::format("1 {}", singular);
  return plural.empty() ? fmt::format("{} {}s", n, singular) : fmt::format("{} {}", n, plural);
}

// "1 process", "2 processes".
inline std::string processes(long long n) { return counted(n, "process", "processes"); }

}  // namespace fast::core
