#pragma once
// Reading a metrics file (`--metrics`, JSON lines: docs/metrics.md) in the command-line tests.

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace fast::testing {

// The records whose "event" is `event`, in file order (none when the file is missing).
inline std::vector<nlohmann::json> records_of(const std::filesystem::path& metrics, const std::string& event) {
  std::vector<nlohmann::json> out;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) {
      nlohmann::json r = nlohmann::json::parse(line);
      if (r["event"] == event) out.push_back(std::move(r));
    }
  return out;
}

}  // namespace fast::testing
