#include "fast/core/port_range.hpp"

#include <algorithm>
#include <random>

#include "fast/core/error.hpp"

namespace fast::core {

std::string PortRange::text() const { return any() ? std::string() : std::to_string(low) + "-" + std::to_string(high); }

PortRange parse_port_range(const std::string& text, const std::string& key) {
  if (text.empty()) return {};
  const std::size_t dash = text.find('-');
  const auto number = [&](const std::string& part) {
    const bool digits = !part.empty() && part.size() <= 5 &&
                        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    return digits ? std::stoi(part) : -1;
  };
  const int low = dash == std::string::npos ? -1 : number(text.substr(0, dash));
  const int high = dash == std::string::npos ? -1 : number(text.substr(dash + 1));
  if (low < 1 || high > 65535 || low > high)
    FAST_THROW(InvalidArgument,
               "{}: expected a port range LO-HI with 1 <= LO <= HI <= 65535 (e.g. 29400-29499), got '{}'", key, text);
  return {low, high};
}

std::vector<int> ports_to_try(const PortRange& range, const std::vector<int>& avoid) {
  if (range.any()) return {0};
  const int n = range.high - range.low + 1;
  std::mt19937 gen(std::random_device{}());
  const int first = std::uniform_int_distribution<int>(0, n - 1)(gen);
  std::vector<int> ports;
  ports.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    if (const int port = range.low + (first + i) % n; std::find(avoid.begin(), avoid.end(), port) == avoid.end())
      ports.push_back(port);
  return ports;
}

}  // namespace fast::core
