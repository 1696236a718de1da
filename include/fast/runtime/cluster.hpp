#pragma once
// Cluster: the simulated machine of the `sim` runtime, read from a TOML file (docs/clusters.md)
// or naming a SimGrid platform XML file. Plain data: building the SimGrid platform from it is the
// sim backend's job. Units: flop/s, bytes/s, seconds (the file also takes "10Gbps", "20ms", "1Gf").

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fast::runtime {

struct ClusterFailure {
  int host = 0;    // index in [0, hosts)
  double off = 0;  // simulated seconds at which the host is turned off
  double on = -1;  // < 0: stays off; else turned on again then (its workers stay lost)
};

struct SpeedProfile {
  int host = 0;
  std::vector<double> times;    // increasing, simulated seconds
  std::vector<double> factors;  // speed multiplier in (0, 1] from each time on
};

struct Cluster {
  std::string name;
  std::filesystem::path source;        // the file read (errors and docs)
  std::filesystem::path platform_xml;  // non-empty: a SimGrid platform file; the fields below except
                                       // failures and model are ignored
  // Hosts.
  int hosts = 1;
  std::vector<double> speeds;   // flop/s of each host (base speed x factor), size hosts
  int cores = 1;                // cores per host
  double memory_bandwidth = 0;  // bytes streamed (read + written) per second by one core;
                                // 0: local memory traffic takes no simulated time
  // Network.
  std::string topology = "star";  // star | full | torus | fat-tree
  double bandwidth = 1.25e9;      // each host link, bytes/s
  double latency = 1e-5;          // each host link, seconds
  double backbone_bandwidth = 0;  // star: a shared backbone (0: none)
  double backbone_latency = 0;
  double loopback_bandwidth = 1e10;  // a host to itself
  double loopback_latency = 0;
  std::vector<unsigned long> torus;  // torus dimensions, product = hosts
  std::string fat_tree;              // SimGrid's "levels;down;up;count", leaves = hosts
  std::string model = "CM02";        // SimGrid network model: CM02 (latency + size/bandwidth) or LV08
  // Heterogeneity over time and failures.
  double straggler_probability = 0;  // per host and period, chance of running slowed down
  double straggler_factor = 1;       // slowdown of a straggling period (>= 1)
  double straggler_period = 1;       // simulated seconds per draw
  double straggler_horizon = 3600;   // draws cover [0, horizon), then repeat
  std::uint64_t seed = 0;            // draws of factors and stragglers
  std::vector<SpeedProfile> speed_profiles;
  std::vector<ClusterFailure> failures;
};

// Reads a cluster file: a .toml description, or a SimGrid platform .xml. Errors (InvalidArgument;
// IoError for a missing file) name the file, the key, what was expected and what was found.
Cluster load_cluster(const std::filesystem::path& file);
// Parses TOML text; `origin` names it in errors.
Cluster parse_cluster(const std::string& toml_text, const std::string& origin);
// The default cluster of a sim run without --cluster: `workers` identical hosts of 1 Gflop/s on a
// 10 Gb/s star with 10 us latency.
Cluster default_cluster(int workers);

// The integer keys of a cluster file with their declared inclusive ranges: the reader converts each
// through core/parse.hpp's checked conversion (out of range or not an integer: InvalidArgument naming
// the file, the key, the range and the value), and the tests feed each of them hostile values.
// "[]" stands for an index: failures[].host is the key of every failures[i].host. A host index is
// also checked against the cluster's host count.
struct ClusterIntegerKey {
  std::string_view key;
  long long min;
  long long max;
  std::string_view section;  // the table or array of tables that holds it: "hosts", "failures", ...
};
std::span<const ClusterIntegerKey> cluster_integer_keys();

// The fat_tree text "LEVELS;DOWN,...;UP,...;COUNT,..." (SimGrid's) as its four lists, each number
// checked (1 to 1000000) and the leaves (the product of DOWN) equal to c.hosts; InvalidArgument
// naming the file and the key otherwise. Empty text: no lists.
std::vector<std::vector<unsigned int>> fat_tree_parts(const Cluster& c);

// Parse "10Gbps" (bits), "1.25GBps" (bytes), "20ms", "1Gf": a number with its unit (a string
// without one, "1", is refused). InvalidArgument naming `origin` and the units accepted.
double parse_bandwidth(const std::string& text, const std::string& origin);
double parse_duration(const std::string& text, const std::string& origin);
double parse_speed(const std::string& text, const std::string& origin);

}  // namespace fast::runtime
