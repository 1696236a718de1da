#pragma once
// The cluster file of the `fast train --runtime sim` tests that lose a host (elastic_cli_test,
// elastic_end_test, elastic_checkpoint_test): 4 hosts of 1 Gflop/s on 1 Gbit/s links with 50 us of
// latency, host 2 turned off at `off` simulated seconds (none when off <= 0), written to
// dir / name; returns its path.

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <string>

namespace fast::testing {

inline std::filesystem::path lossy_cluster_file(const std::filesystem::path& dir, const std::string& name, double off) {
  const std::filesystem::path file = dir / name;
  std::ofstream out(file);
  out << "[hosts]\ncount = 4\nspeed = \"1Gf\"\n[network]\nbandwidth = \"1Gbps\"\nlatency = \"50us\"\n";
  if (off > 0) out << "[[failures]]\nhost = 2\noff = \"" << std::setprecision(12) << off << "s\"\n";
  return file;
}

}  // namespace fast::testing
