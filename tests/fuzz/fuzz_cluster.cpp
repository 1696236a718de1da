// Cluster files in TOML (runtime/cluster.hpp, parse_cluster): the TOML syntax, every key's type and
// range, the fat-tree and torus descriptions, failures and speed profiles.

#include "fast/runtime/cluster.hpp"
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fast::fuzz::expect_accepted_or_refused([&] {
    const fast::runtime::Cluster c =
        fast::runtime::parse_cluster(std::string(fast::fuzz::text_of(data, size)), "fuzz.toml");
    if (c.hosts < 1 || c.speeds.size() != static_cast<std::size_t>(c.hosts)) __builtin_trap();
  });
  return 0;
}
