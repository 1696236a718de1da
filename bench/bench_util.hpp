#pragma once
// Small helpers shared by the bench/ programs: a steady clock in seconds, a median, a comma list.

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace fast::bench {

// Seconds on the steady clock (differences only).
inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The median of v (the upper one for an even count); v must not be empty.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// "a,b,c" -> {"a", "b", "c"}; "" -> {""}.
inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t at = 0;;) {
    const auto comma = s.find(',', at);
    out.push_back(s.substr(at, comma - at));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

}  // namespace fast::bench
