#include "fast/runtime/cluster.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "fast/core/error.hpp"
#include "fast/core/file_status.hpp"
#include "fast/core/parse.hpp"
#include "fast/core/random.hpp"
#include "fast/core/suggest.hpp"

namespace fast::runtime {

namespace {

constexpr long long kMaxHosts = 1000000;
constexpr long long kMaxSeed = std::numeric_limits<std::int64_t>::max();
constexpr std::array kIntegerKeys{
    ClusterIntegerKey{"hosts.count", 1, kMaxHosts, "hosts"},
    ClusterIntegerKey{"hosts.cores", 1, 65536, "hosts"},
    ClusterIntegerKey{"hosts.seed", 0, kMaxSeed, "hosts"},
    ClusterIntegerKey{"network.torus[]", 1, kMaxHosts, "network"},
    ClusterIntegerKey{"stragglers.seed", 0, kMaxSeed, "stragglers"},
    ClusterIntegerKey{"failures[].host", 0, kMaxHosts - 1, "failures"},
    ClusterIntegerKey{"speed_profiles[].host", 0, kMaxHosts - 1, "speed_profiles"},
};

const ClusterIntegerKey& declared(std::string_view key) {
  for (const ClusterIntegerKey& k : kIntegerKeys)
    if (k.key == key) return k;
  FAST_THROW(core::InvalidUsage, "cluster file: '{}' is not a declared integer key", key);
}

// "<number><unit>" with the unit's factor from `units`. A string without a unit ("1") is refused:
// it is more likely a unit forgotten than base units (a TOML number, unquoted, is in base units).
// Throws InvalidArgument naming origin and `what`.
double parse_with_units(const std::string& text, const std::string& origin, const char* what,
                        const std::vector<std::pair<std::string, double>>& units) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  const std::string unit(end);
  std::vector<std::string> names;
  for (const auto& u : units) names.push_back(u.first);
  FAST_ENFORCE(end == text.c_str() || !unit.empty(),
               "{}: the string \"{}\" has no unit; expected {} (a number with a unit among {}): a number without "
               "quotes is in base units, a string names its unit (docs/clusters.md, \"Units\")",
               origin, text, what, fmt::join(names, ", "));
  if (end != text.c_str() && std::isfinite(value))
    for (const auto& [suffix, factor] : units)
      if (unit == suffix) return value * factor;
  FAST_THROW(core::InvalidArgument, "{}: expected {} (a number with a unit among {}), got '{}'", origin, what,
             fmt::join(names, ", "), text);
}

struct Reader {
  std::string file;

  std::string where(const std::string& key) const { return fmt::format("cluster file '{}': key '{}'", file, key); }

  void known(const toml::table& t, const std::string& prefix, const std::set<std::string>& keys) const {
    for (const auto& [k, v] : t) {
      const std::string name(k.str());
      FAST_ENFORCE(keys.count(name) > 0, "cluster file '{}': unknown key '{}{}' (line {}){}; expected one of: {}", file,
                   prefix, name, v.source().begin.line,
                   core::did_you_mean(name, std::vector<std::string>(keys.begin(), keys.end())), fmt::join(keys, ", "));
    }
  }

  static std::string got(const toml::node& n) {
    if (auto s = n.value_exact<std::string>()) return fmt::format("the string '{}'", *s);
    if (n.is_integer() || n.is_floating_point()) return fmt::format("the number {}", *n.value<double>());
    if (n.is_boolean()) return "a boolean";
    if (n.is_array()) return "an array";
    if (n.is_table()) return "a table";
    return "a date or time";
  }

  // A number, or a string with units parsed by `parse`.
  template <typename Parse>
  double quantity(const toml::node& n, const std::string& key, const char* what, Parse parse) const {
    if (n.is_integer() || n.is_floating_point()) return *n.value<double>();
    if (auto s = n.value_exact<std::string>()) return parse(*s, where(key));
    FAST_THROW(core::InvalidArgument, "{}: expected {}, got {}", where(key), what, got(n));
  }
  double number(const toml::node& n, const std::string& key) const {
    FAST_ENFORCE(n.is_integer() || n.is_floating_point(), "{}: expected a number, got {}", where(key), got(n));
    return *n.value<double>();
  }
  // The integer at `key` (failures[2].host), declared as `declared_key` (failures[].host) in
  // kIntegerKeys: checked against its range as T.
  template <typename T>
  T integer(const toml::node& n, const std::string& key, std::string_view declared_key) const {
    FAST_ENFORCE(n.is_integer(), "{}: expected an integer, got {}", where(key), got(n));
    const ClusterIntegerKey& d = declared(declared_key);
    return core::checked_int<T>(*n.value<std::int64_t>(), where(key), d.min, d.max);
  }
  std::string string(const toml::node& n, const std::string& key) const {
    auto s = n.value_exact<std::string>();
    FAST_ENFORCE(s.has_value(), "{}: expected a string, got {}", where(key), got(n));
    return *s;
  }
  std::vector<double> numbers(const toml::node& n, const std::string& key) const {
    const toml::array* a = n.as_array();
    FAST_ENFORCE(a != nullptr, "{}: expected an array of numbers, got {}", where(key), got(n));
    std::vector<double> out;
    for (std::size_t i = 0; i < a->size(); ++i) out.push_back(number((*a)[i], fmt::format("{}[{}]", key, i)));
    return out;
  }
  const toml::table& table(const toml::node& n, const std::string& key) const {
    const toml::table* t = n.as_table();
    FAST_ENFORCE(t != nullptr, "{}: expected a table, got {}", where(key), got(n));
    return *t;
  }
};

double positive(double v, const std::string& where, const char* what) {
  FAST_ENFORCE(v > 0 && std::isfinite(v), "{}: expected a positive {}, got {}", where, what, v);
  return v;
}

void read_hosts(const Reader& r, const toml::table& t, Cluster& c) {
  r.known(t, "hosts.", {"count", "speed", "cores", "memory_bandwidth", "factors", "distribution", "seed"});
  double speed = 1e9;
  std::vector<double> factors;
  std::string distribution;
  if (auto n = t.get("count")) {
    c.hosts = r.integer<int>(*n, "hosts.count", "hosts.count");
  }
  if (auto n = t.get("speed"))
    speed = positive(r.quantity(*n, "hosts.speed", "a speed like \"1Gf\" or a number of flop/s", parse_speed),
                     r.where("hosts.speed"), "speed");
  if (auto n = t.get("cores")) {
    c.cores = r.integer<int>(*n, "hosts.cores", "hosts.cores");
  }
  if (auto n = t.get("memory_bandwidth"))
    c.memory_bandwidth = positive(
        r.quantity(*n, "hosts.memory_bandwidth", "a bandwidth like \"20GBps\" or a number of bytes/s", parse_bandwidth),
        r.where("hosts.memory_bandwidth"), "memory bandwidth");
  if (auto n = t.get("seed")) c.seed = r.integer<std::uint64_t>(*n, "hosts.seed", "hosts.seed");
  if (auto n = t.get("factors")) factors = r.numbers(*n, "hosts.factors");
  if (auto n = t.get("distribution")) distribution = r.string(*n, "hosts.distribution");
  FAST_ENFORCE(factors.empty() || distribution.empty(), "{}: give factors or distribution, not both",
               r.where("hosts.distribution"));
  if (!factors.empty()) {
    FAST_ENFORCE(static_cast<int>(factors.size()) == c.hosts, "{}: expected one factor per host ({}), got {}",
                 r.where("hosts.factors"), c.hosts, factors.size());
    for (std::size_t i = 0; i < factors.size(); ++i)
      positive(factors[i], r.where(fmt::format("hosts.factors[{}]", i)), "factor");
  } else if (!distribution.empty()) {
    double lo = 0, hi = 0;
    char* end = nullptr;
    const std::string prefix = "uniform:";
    bool ok = distribution.rfind(prefix, 0) == 0;
    if (ok) {
      const char* p = distribution.c_str() + prefix.size();
      lo = std::strtod(p, &end);
      ok = end != p && *end == '-';
      if (ok) {
        p = end + 1;
        hi = std::strtod(p, &end);
        ok = end != p && *end == '\0' && lo > 0 && hi >= lo;
      }
    }
    FAST_ENFORCE(ok, "{}: expected \"uniform:LO-HI\" with 0 < LO <= HI, got '{}'", r.where("hosts.distribution"),
                 distribution);
    core::SplitMix64 rng(c.seed);  // the same factors on every platform
    for (int h = 0; h < c.hosts; ++h) factors.push_back(lo + (hi - lo) * core::uniform01(rng()));
  }
  c.speeds.assign(static_cast<std::size_t>(c.hosts), speed);
  for (std::size_t i = 0; i < factors.size(); ++i) c.speeds[i] = speed * factors[i];
}

void read_network(const Reader& r, const toml::table& t, Cluster& c) {
  r.known(t, "network.",
          {"topology", "bandwidth", "latency", "backbone_bandwidth", "backbone_latency", "loopback_bandwidth",
           "loopback_latency", "torus", "fat_tree", "model"});
  const char* bw = "a bandwidth like \"10Gbps\" or a number of bytes/s";
  const char* lat = "a duration like \"20ms\" or a number of seconds";
  if (auto n = t.get("topology")) {
    c.topology = r.string(*n, "network.topology");
    const std::vector<std::string> topologies{"star", "full", "torus", "fat-tree"};
    FAST_ENFORCE(std::find(topologies.begin(), topologies.end(), c.topology) != topologies.end(),
                 "{}: expected one of {}, got '{}'{}", r.where("network.topology"), fmt::join(topologies, ", "),
                 c.topology, core::did_you_mean(c.topology, topologies));
  }
  // A key of one topology under another would be dropped without a word (a backbone that a switch
  // from star to full no longer simulates): refused, naming the topology it belongs to.
  for (const auto& [key, topology] : {std::pair{"backbone_bandwidth", "star"}, std::pair{"backbone_latency", "star"},
                                      std::pair{"torus", "torus"}, std::pair{"fat_tree", "fat-tree"}}) {
    const std::string name = fmt::format("network.{}", key);
    FAST_ENFORCE(!t.contains(key) || c.topology == topology,
                 "{}: a setting of network.topology = \"{}\" only, and this file's is \"{}\" (remove it, or change "
                 "the topology)",
                 r.where(name), topology, c.topology);
  }
  if (auto n = t.get("bandwidth"))
    c.bandwidth =
        positive(r.quantity(*n, "network.bandwidth", bw, parse_bandwidth), r.where("network.bandwidth"), "bandwidth");
  if (auto n = t.get("latency")) c.latency = r.quantity(*n, "network.latency", lat, parse_duration);
  if (auto n = t.get("backbone_bandwidth"))
    c.backbone_bandwidth = positive(r.quantity(*n, "network.backbone_bandwidth", bw, parse_bandwidth),
                                    r.where("network.backbone_bandwidth"), "bandwidth");
  if (auto n = t.get("backbone_latency"))
    c.backbone_latency = r.quantity(*n, "network.backbone_latency", lat, parse_duration);
  if (auto n = t.get("loopback_bandwidth"))
    c.loopback_bandwidth = positive(r.quantity(*n, "network.loopback_bandwidth", bw, parse_bandwidth),
                                    r.where("network.loopback_bandwidth"), "bandwidth");
  if (auto n = t.get("loopback_latency"))
    c.loopback_latency = r.quantity(*n, "network.loopback_latency", lat, parse_duration);
  for (const auto& [v, key] :
       {std::pair{c.latency, "network.latency"}, std::pair{c.backbone_latency, "network.backbone_latency"},
        std::pair{c.loopback_latency, "network.loopback_latency"}})
    FAST_ENFORCE(v >= 0, "{}: expected a latency >= 0, got {}", r.where(key), v);
  if (auto n = t.get("model")) {
    c.model = r.string(*n, "network.model");
    FAST_ENFORCE(c.model == "CM02" || c.model == "LV08", "{}: expected CM02 or LV08, got '{}'",
                 r.where("network.model"), c.model);
  }
  if (auto n = t.get("torus")) {
    const toml::array* a = n->as_array();
    FAST_ENFORCE(a != nullptr, "{}: expected an array of integers, got {}", r.where("network.torus"), Reader::got(*n));
    long long product = 1;
    for (std::size_t i = 0; i < a->size(); ++i) {
      const auto d = r.integer<unsigned long>((*a)[i], fmt::format("network.torus[{}]", i), "network.torus[]");
      c.torus.push_back(d);
      product = std::min(product * static_cast<long long>(d), kMaxHosts + 1);  // no overflow: both <= 1e6 + 1
    }
    FAST_ENFORCE(product == c.hosts, "{}: expected dimensions whose product is the host count {}, got {}",
                 r.where("network.torus"), c.hosts,
                 product > kMaxHosts ? std::string("more than 1000000") : std::to_string(product));
  }
  if (auto n = t.get("fat_tree")) c.fat_tree = r.string(*n, "network.fat_tree");
  if (c.topology == "torus" && c.torus.empty()) c.torus = {static_cast<unsigned long>(c.hosts)};
  if (c.topology == "fat-tree")
    FAST_ENFORCE(!c.fat_tree.empty(), "{}: topology fat-tree needs fat_tree = \"LEVELS;DOWN;UP;COUNT\"",
                 r.where("network.fat_tree"));
  (void)fat_tree_parts(c);  // checked now, before anything runs
}

void read_stragglers(const Reader& r, const toml::table& t, Cluster& c) {
  r.known(t, "stragglers.", {"probability", "factor", "period", "horizon", "seed"});
  if (auto n = t.get("probability")) c.straggler_probability = r.number(*n, "stragglers.probability");
  FAST_ENFORCE(c.straggler_probability >= 0 && c.straggler_probability <= 1, "{}: expected a value in [0, 1], got {}",
               r.where("stragglers.probability"), c.straggler_probability);
  if (auto n = t.get("factor")) c.straggler_factor = r.number(*n, "stragglers.factor");
  FAST_ENFORCE(c.straggler_factor >= 1, "{}: expected a value >= 1, got {}", r.where("stragglers.factor"),
               c.straggler_factor);
  if (auto n = t.get("period"))
    c.straggler_period = positive(r.quantity(*n, "stragglers.period", "a duration", parse_duration),
                                  r.where("stragglers.period"), "duration");
  if (auto n = t.get("horizon"))
    c.straggler_horizon = positive(r.quantity(*n, "stragglers.horizon", "a duration", parse_duration),
                                   r.where("stragglers.horizon"), "duration");
  if (auto n = t.get("seed")) c.seed = r.integer<std::uint64_t>(*n, "stragglers.seed", "stragglers.seed");
}

int host_index(const Reader& r, const toml::table& t, const std::string& key, const Cluster& c) {
  auto n = t.get("host");
  FAST_ENFORCE(n != nullptr, "{}: missing (a host index)", r.where(key + ".host"));
  const auto h = r.integer<int>(*n, key + ".host", key.substr(0, key.find('[')) + "[].host");
  // On a platform file, its hosts are known once SimGrid read it (sim::build_platform checks then).
  FAST_ENFORCE(h >= 0 && (h < c.hosts || !c.platform_xml.empty()), "{}: expected a host index in [0, {}), got {}",
               r.where(key + ".host"), c.hosts, h);
  return h;
}

void read_lists(const Reader& r, const toml::table& root, Cluster& c) {
  if (auto n = root.get("failures")) {
    const toml::array* a = n->as_array();
    FAST_ENFORCE(a != nullptr, "{}: expected [[failures]] tables, got {}", r.where("failures"), Reader::got(*n));
    for (std::size_t i = 0; i < a->size(); ++i) {
      const std::string key = fmt::format("failures[{}]", i);
      const toml::table& t = r.table((*a)[i], key);
      r.known(t, key + ".", {"host", "off", "on"});
      ClusterFailure f;
      f.host = host_index(r, t, key, c);
      auto off = t.get("off");
      FAST_ENFORCE(off != nullptr, "{}: missing (the time the host is turned off)", r.where(key + ".off"));
      f.off = r.quantity(*off, key + ".off", "a duration", parse_duration);
      // A host off from time 0 never takes part in the set-up (the Worker's collectives need every
      // worker), so the run could only end at once: say so instead (docs/simulation.md, "Failures").
      FAST_ENFORCE(f.off > 0,
                   "{}: expected a time > 0, got {}; a host that is off from the start never joins the run: leave "
                   "it out of the cluster (or give it its workers' ranks last and run fewer workers)",
                   r.where(key + ".off"), f.off);
      if (auto on = t.get("on")) {
        f.on = r.quantity(*on, key + ".on", "a duration", parse_duration);
        FAST_ENFORCE(f.on > f.off, "{}: expected a time after off ({}), got {}", r.where(key + ".on"), f.off, f.on);
      }
      c.failures.push_back(f);
    }
  }
  if (auto n = root.get("speed_profiles")) {
    const toml::array* a = n->as_array();
    FAST_ENFORCE(a != nullptr, "{}: expected [[speed_profiles]] tables, got {}", r.where("speed_profiles"),
                 Reader::got(*n));
    for (std::size_t i = 0; i < a->size(); ++i) {
      const std::string key = fmt::format("speed_profiles[{}]", i);
      const toml::table& t = r.table((*a)[i], key);
      r.known(t, key + ".", {"host", "times", "factors"});
      SpeedProfile p;
      p.host = host_index(r, t, key, c);
      if (auto v = t.get("times")) p.times = r.numbers(*v, key + ".times");
      if (auto v = t.get("factors")) p.factors = r.numbers(*v, key + ".factors");
      FAST_ENFORCE(!p.times.empty() && p.times.size() == p.factors.size(),
                   "{}: expected times and factors of the same non-zero length, got {} and {}", r.where(key),
                   p.times.size(), p.factors.size());
      for (std::size_t j = 0; j < p.times.size(); ++j) {
        FAST_ENFORCE(p.times[j] >= 0 && (j == 0 || p.times[j] > p.times[j - 1]),
                     "{}: expected increasing times >= 0, got {} at index {}", r.where(key + ".times"), p.times[j], j);
        FAST_ENFORCE(p.factors[j] > 0 && p.factors[j] <= 1, "{}: expected factors in (0, 1], got {} at index {}",
                     r.where(key + ".factors"), p.factors[j], j);
      }
      c.speed_profiles.push_back(std::move(p));
    }
  }
}

// Line `line` (from 1) of `text`, at most 80 characters: what a parse error quotes (the key with it).
std::string line_of(const std::string& text, std::size_t line) {
  std::size_t at = 0;
  for (std::size_t i = 1; i < line && at != std::string::npos; ++i) {
    at = text.find('\n', at);
    if (at != std::string::npos) ++at;
  }
  if (at == std::string::npos || at > text.size()) return "";
  std::string out = text.substr(at, std::min(text.find('\n', at), text.size()) - at);
  if (out.size() > 80) out = out.substr(0, 77) + "...";
  for (char& ch : out)
    if (static_cast<unsigned char>(ch) < 0x20) ch = ' ';
  return out;
}

}  // namespace

std::span<const ClusterIntegerKey> cluster_integer_keys() { return kIntegerKeys; }

std::vector<std::vector<unsigned int>> fat_tree_parts(const Cluster& c) {
  std::vector<std::vector<unsigned int>> parts;
  if (c.fat_tree.empty()) return parts;
  const std::string where = fmt::format("cluster file '{}': key 'network.fat_tree'", c.source.string());
  std::stringstream in(c.fat_tree);
  std::string part;
  while (std::getline(in, part, ';')) {
    std::vector<unsigned int> values;
    std::stringstream items(part);
    std::string item;
    while (std::getline(items, item, ',')) values.push_back(core::parse_int<unsigned int>(item, where, 1, kMaxHosts));
    parts.push_back(values);
  }
  FAST_ENFORCE(
      parts.size() == 4 && parts[0].size() == 1 && parts[1].size() == parts[0][0] && parts[2].size() == parts[0][0] &&
          parts[3].size() == parts[0][0],
      "{}: expected \"LEVELS;DOWN;UP;COUNT\" with LEVELS numbers in each list (e.g. \"2;4,4;1,2;1,2\"), got '{}'",
      where, c.fat_tree);
  unsigned long long leaves = 1;
  for (unsigned int d : parts[1]) leaves = std::min<unsigned long long>(leaves * d, kMaxHosts + 1);
  FAST_ENFORCE(leaves == static_cast<unsigned long long>(c.hosts),
               "{}: expected a tree with as many leaves as hosts ({}), got {}", where, c.hosts,
               leaves > kMaxHosts ? std::string("more than 1000000") : std::to_string(leaves));
  return parts;
}

double parse_bandwidth(const std::string& text, const std::string& origin) {
  return parse_with_units(text, origin, "a bandwidth",
                          {{"bps", 0.125},
                           {"kbps", 125.0},
                           {"Mbps", 1.25e5},
                           {"Gbps", 1.25e8},
                           {"Tbps", 1.25e11},
                           {"Bps", 1.0},
                           {"kBps", 1e3},
                           {"MBps", 1e6},
                           {"GBps", 1e9},
                           {"TBps", 1e12}});
}

double parse_duration(const std::string& text, const std::string& origin) {
  return parse_with_units(text, origin, "a duration", {{"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}});
}

double parse_speed(const std::string& text, const std::string& origin) {
  return parse_with_units(text, origin, "a speed",
                          {{"f", 1.0}, {"kf", 1e3}, {"Mf", 1e6}, {"Gf", 1e9}, {"Tf", 1e12}, {"Pf", 1e15}});
}

Cluster parse_cluster(const std::string& toml_text, const std::string& origin) {
  toml::table root;
  try {
    root = toml::parse(toml_text, origin);
  } catch (const toml::parse_error& e) {
    FAST_THROW(core::InvalidArgument, "cluster file '{}' line {} column {} ('{}'): {}", origin, e.source().begin.line,
               e.source().begin.column, line_of(toml_text, e.source().begin.line), e.description());
  }
  const Reader r{origin};
  r.known(root, "", {"name", "platform", "hosts", "network", "stragglers", "failures", "speed_profiles"});
  Cluster c;
  c.source = origin;
  if (auto n = root.get("name")) c.name = r.string(*n, "name");
  if (auto n = root.get("platform")) {
    c.platform_xml = r.string(*n, "platform");
    if (c.platform_xml.is_relative()) c.platform_xml = std::filesystem::path(origin).parent_path() / c.platform_xml;
    FAST_ENFORCE_AS(core::IoError, std::filesystem::exists(core::file_status_of(c.platform_xml, "platform file")),
                    "{}: platform file '{}' does not exist", r.where("platform"), c.platform_xml.string());
    // The platform file describes the hosts, their speeds over time and the network: a setting of
    // those beside it would be silently ignored. The network model is the one setting kept.
    for (const char* table : {"hosts", "stragglers", "speed_profiles"})
      FAST_ENFORCE(!root.contains(table),
                   "cluster file '{}': expected no `{}` beside `platform` (the platform file '{}' describes the hosts, "
                   "their speeds and the network), got one; remove it",
                   origin, table, c.platform_xml.string());
    if (const toml::table* network = root["network"].as_table())
      for (const auto& [key, value] : *network)
        FAST_ENFORCE(key.str() == "model",
                     "cluster file '{}': expected only `network.model` beside `platform` (the platform file '{}' "
                     "describes the network), got `network.{}`; remove it",
                     origin, c.platform_xml.string(), key.str());
  }
  if (auto n = root.get("hosts"))
    read_hosts(r, r.table(*n, "hosts"), c);
  else
    c.speeds.assign(static_cast<std::size_t>(c.hosts), 1e9);
  if (auto n = root.get("network")) read_network(r, r.table(*n, "network"), c);
  if (auto n = root.get("stragglers")) read_stragglers(r, r.table(*n, "stragglers"), c);
  read_lists(r, root, c);
  if (c.name.empty()) c.name = std::filesystem::path(origin).stem().string();
  return c;
}

Cluster load_cluster(const std::filesystem::path& file) {
  // The error_code forms: a name the system refuses (too long, a loop of links) is this file's
  // IoError, not a filesystem_error.
  const std::filesystem::file_status status = core::file_status_of(file, "cluster file");
  FAST_ENFORCE_AS(core::IoError, std::filesystem::exists(status), "cluster file '{}' does not exist{}", file.string(),
                  core::relative_to_note(file));
  // A folder would read as an empty description (the default cluster).
  FAST_ENFORCE(!std::filesystem::is_directory(status), "cluster file '{}' is a folder; expected a .toml or .xml file",
               file.string());
  if (file.extension() == ".xml") {
    Cluster c;
    c.source = file;
    c.platform_xml = file;
    c.name = file.stem().string();
    return c;
  }
  std::ifstream in(file);
  FAST_ENFORCE_AS(core::IoError, in.good(), "cluster file '{}' cannot be read", file.string());
  std::stringstream text;
  text << in.rdbuf();
  return parse_cluster(text.str(), file.string());
}

Cluster default_cluster(int workers) {
  Cluster c;
  c.name = "default";
  c.hosts = std::max(1, workers);
  c.speeds.assign(static_cast<std::size_t>(c.hosts), 1e9);
  return c;
}

}  // namespace fast::runtime
