#include "platform.hpp"

#include <atomic>

#include <simgrid/kernel/ProfileBuilder.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/core/random.hpp"

namespace fast::runtime::sim {

namespace sg = simgrid::s4u;

namespace {

std::string host_name(unsigned long i) { return fmt::format("host-{}", i); }

// Natural order: digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      const std::string na = a.substr(i, i2 - i), nb = b.substr(j, j2 - j);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = i2, j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

sg::Host* make_host(sg::NetZone* zone, const Cluster& c, unsigned long i) {
  sg::Host* h = zone->create_host(host_name(i), c.speeds[i]);
  h->set_core_count(c.cores);
  return h->seal();
}

sg::Link* loopback(sg::NetZone* zone, const Cluster& c, unsigned long i) {
  return zone->create_link(fmt::format("loopback-{}", i), c.loopback_bandwidth)
      ->set_latency(c.loopback_latency)
      ->set_sharing_policy(sg::Link::SharingPolicy::FATPIPE)
      ->seal();
}

void build_star(const Cluster& c) {
  sg::NetZone* zone = sg::create_star_zone("cluster");
  sg::Link* backbone = nullptr;
  if (c.backbone_bandwidth > 0)
    backbone = zone->create_link("backbone", c.backbone_bandwidth)->set_latency(c.backbone_latency)->seal();
  for (unsigned long i = 0; i < static_cast<unsigned long>(c.hosts); ++i) {
    sg::Host* h = make_host(zone, c, i);
    const sg::Link* link =
        zone->create_split_duplex_link(fmt::format("link-{}", i), c.bandwidth)->set_latency(c.latency)->seal();
    std::vector<sg::LinkInRoute> route{sg::LinkInRoute(link, sg::LinkInRoute::Direction::UP)};
    if (backbone != nullptr) route.emplace_back(backbone);
    zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr, route, true);
    zone->add_route(h->get_netpoint(), h->get_netpoint(), nullptr, nullptr, {sg::LinkInRoute(loopback(zone, c, i))},
                    false);
  }
  zone->seal();
}

void build_full(const Cluster& c) {
  sg::NetZone* zone = sg::create_full_zone("cluster");
  std::vector<sg::Host*> hosts;
  for (unsigned long i = 0; i < static_cast<unsigned long>(c.hosts); ++i) hosts.push_back(make_host(zone, c, i));
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    zone->add_route(hosts[i]->get_netpoint(), hosts[i]->get_netpoint(), nullptr, nullptr,
                    {sg::LinkInRoute(loopback(zone, c, i))}, false);
    for (std::size_t j = i + 1; j < hosts.size(); ++j) {
      const sg::Link* link =
          zone->create_split_duplex_link(fmt::format("link-{}-{}", i, j), c.bandwidth)->set_latency(c.latency)->seal();
      zone->add_route(hosts[i]->get_netpoint(), hosts[j]->get_netpoint(), nullptr, nullptr,
                      {sg::LinkInRoute(link, sg::LinkInRoute::Direction::UP)}, true);
    }
  }
  zone->seal();
}

sg::ClusterCallbacks cluster_callbacks(const Cluster& c) {
  auto netpoint = [&c](sg::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
    sg::Host* h = make_host(zone, c, id);
    return std::make_pair(h->get_netpoint(), static_cast<simgrid::kernel::routing::NetPoint*>(nullptr));
  };
  auto loop = [&c](sg::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
    return loopback(zone, c, id);
  };
  return sg::ClusterCallbacks(netpoint, loop, {});
}

void build_torus(const Cluster& c) {
  sg::create_torus_zone("cluster", nullptr, c.torus, cluster_callbacks(c), c.bandwidth, c.latency,
                        sg::Link::SharingPolicy::SPLITDUPLEX)
      ->seal();
}

void build_fat_tree(const Cluster& c) {
  const std::vector<std::vector<unsigned int>> parts = fat_tree_parts(c);  // checked when the file was read
  sg::create_fatTree_zone("cluster", nullptr, sg::FatTreeParams(parts[0][0], parts[1], parts[2], parts[3]),
                          cluster_callbacks(c), c.bandwidth, c.latency, sg::Link::SharingPolicy::SPLITDUPLEX)
      ->seal();
}

// At most this many hosts are named in an info line; FAST_LOG_LEVEL=debug names every one.
constexpr std::size_t kHostsNamed = 16;

// "host-0 0.82 Gf, host-1 1.3 Gf, ..., 12 more": the first kHostsNamed of `items`, the rest counted.
std::string named_hosts(const std::vector<std::string>& items) {
  const std::size_t shown = std::min(items.size(), kHostsNamed);
  std::string text = fmt::format("{}", fmt::join(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(shown), ", "));
  if (items.size() > shown) text += fmt::format(", and {} more (FAST_LOG_LEVEL=debug lists all)", items.size() - shown);
  return text;
}

// The speeds of hosts that differ (hosts.factors, or those drawn from hosts.distribution), so that a
// user can see which host is slow: info names the first ones, debug every one.
void log_host_speeds(const Cluster& c) {
  if (c.speeds.empty() || std::all_of(c.speeds.begin(), c.speeds.end(), [&](double v) { return v == c.speeds[0]; }))
    return;
  std::vector<std::string> items;
  for (std::size_t h = 0; h < c.speeds.size(); ++h) items.push_back(fmt::format("{} {:.4g} Gf", host_name(h), c.speeds[h] / 1e9));
  const auto [slow, fast] = std::minmax_element(c.speeds.begin(), c.speeds.end());
  core::log(core::LogLevel::info, "sim: host speeds from {:.4g} Gf ({}) to {:.4g} Gf ({}): {}", *slow / 1e9,
            host_name(static_cast<std::size_t>(slow - c.speeds.begin())), *fast / 1e9,
            host_name(static_cast<std::size_t>(fast - c.speeds.begin())), named_hosts(items));
  if (items.size() > kHostsNamed) core::log(core::LogLevel::debug, "sim: host speeds: {}", fmt::join(items, ", "));
}

// A SimGrid profile of the points (absolute date in simulated seconds, value), repeated every
// `period` seconds from the start (<= 0: not repeated). It is the profile that
// ProfileBuilder::from_string makes of the lines "date value" (SimGrid's legacy format: each
// point's date kept as the delay from the previous point, the first repetition's first point
// delayed by what is left of the period), built from the numbers without printing and parsing
// them: a straggler profile has a point per change of speed, thousands per host. The dates must
// be >= 0 and increasing (the cluster's checks).
simgrid::kernel::profile::Profile* profile_of(const std::string& name,
                                              const std::vector<std::pair<double, double>>& points, double period) {
  using simgrid::kernel::profile::DatedValue;
  std::vector<DatedValue> pattern;
  pattern.reserve(points.size());
  double last = 0;
  for (const auto& [date, value] : points) {
    pattern.emplace_back(date - last, value);
    last = date;
  }
  const bool repeats = period > 0;
  const double loop_delay = repeats ? period - last : 0;
  auto fill = [pattern = std::move(pattern), repeats, loop_delay](std::vector<DatedValue>& events) {
    const std::size_t before = events.size();
    if (before != 0 && !repeats) return;
    events.insert(events.end(), pattern.begin(), pattern.end());
    if (before != 0 && !pattern.empty()) events[before].date_ += loop_delay;
  };
  return simgrid::kernel::profile::ProfileBuilder::from_callback(name, fill, repeats ? loop_delay : -1.0);
}

// Speed over time of host i: its explicit profile, else the straggler draws (if any). The hosts
// that straggle are logged (info: how many periods each; debug: when).
void add_speed_profiles(const Cluster& c, const std::vector<sg::Host*>& hosts) {
  std::vector<bool> explicit_profile(hosts.size(), false);
  std::vector<std::pair<double, double>> points;
  for (const SpeedProfile& p : c.speed_profiles) {
    points.clear();
    for (std::size_t j = 0; j < p.times.size(); ++j) points.emplace_back(p.times[j], p.factors[j]);
    hosts[static_cast<std::size_t>(p.host)]->set_speed_profile(profile_of(fmt::format("speed-{}", p.host), points, -1));
    explicit_profile[static_cast<std::size_t>(p.host)] = true;
  }
  if (c.straggler_probability <= 0 || c.straggler_factor <= 1) return;
  core::SplitMix64 rng(c.seed ^ 0x5bd1e9955bd1e995ULL);  // the same draws on every platform
  const bool log_when = core::log_level() >= core::LogLevel::debug;
  std::vector<std::string> stragglers;
  std::size_t periods = 0, slow_periods = 0;
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    points.clear();
    std::vector<double> when;  // the starts of this host's slow periods
    double last = 1.0;
    for (double t = 0; t < c.straggler_horizon; t += c.straggler_period) {
      const double u = core::uniform01(rng());
      const double value = u < c.straggler_probability ? 1.0 / c.straggler_factor : 1.0;
      if (value != last || t == 0) points.emplace_back(t, value);
      last = value;
      if (explicit_profile[h]) continue;
      ++periods;
      if (value < 1.0) when.push_back(t);
    }
    if (explicit_profile[h]) continue;
    if (!when.empty()) {
      slow_periods += when.size();
      stragglers.push_back(fmt::format("{} ({} of {} periods)", host_name(h), when.size(),
                                       static_cast<std::size_t>(std::ceil(c.straggler_horizon / c.straggler_period))));
      if (log_when)
        core::log(core::LogLevel::debug, "sim: {} runs {}x slower in the periods of {:.6g} s from {:.6g} s",
                  host_name(h), c.straggler_factor, c.straggler_period, fmt::join(when, " s, "));
    }
    hosts[h]->set_speed_profile(profile_of(fmt::format("stragglers-{}", h), points, c.straggler_horizon));
  }
  core::log(core::LogLevel::info,
            "sim: stragglers drawn: {} of {} host periods of {:.6g} s run {}x slower (repeating every {:.6g} s){}{}",
            slow_periods, periods, c.straggler_period, c.straggler_factor, c.straggler_horizon,
            stragglers.empty() ? "" : ": ", named_hosts(stragglers));
}

// Every pair of hosts of a platform file must be connected: SimGrid aborts the process (it does not
// throw) at the first message between two hosts without a route. O(hosts^2) route look-ups, done
// once when the simulation starts; the clusters FAST builds itself are connected by construction.
void check_routes(const Cluster& c, const std::vector<sg::Host*>& hosts) {
  std::vector<sg::Link*> links;
  for (sg::Host* from : hosts)
    for (sg::Host* to : hosts) {
      if (from == to) continue;
      links.clear();
      double latency = 0;
      from->route_to(to, links, &latency);
      FAST_ENFORCE(!links.empty() || latency > 0,
                   "platform file '{}': no route from host '{}' to host '{}'; every pair of hosts must be connected "
                   "(a <route> or a routing that finds one)",
                   c.platform_xml.string(), from->get_name(), to->get_name());
    }
}

}  // namespace

std::vector<sg::Host*> build_platform(const Cluster& c) {
  sg::Engine* engine = sg::Engine::get_instance();
  std::vector<sg::Host*> hosts;
  if (!c.platform_xml.empty()) {
    // SimGrid's platform parser keeps state of its own across engines; after a file it refused,
    // the next platform file of the process crashes it (seen with SimGrid 3.32). Refused instead.
    static std::atomic<bool> parser_failed{false};
    FAST_ENFORCE_AS(core::InvalidUsage, !parser_failed.load(),
                    "platform file '{}': a platform file failed to load earlier in this process, and SimGrid cannot "
                    "load another one after that; run this simulation in a new process",
                    c.platform_xml.string());
    try {
      engine->load_platform(c.platform_xml.string());
    } catch (const std::exception& e) {  // simgrid::ParseError and the like: the file is bad input
      parser_failed = true;
      FAST_THROW(core::InvalidArgument, "platform file '{}': SimGrid cannot read it: {}", c.platform_xml.string(),
                 e.what());
    }
    hosts = engine->get_all_hosts();
    FAST_ENFORCE(!hosts.empty(), "platform file '{}': expected at least one host, got none", c.platform_xml.string());
    std::sort(hosts.begin(), hosts.end(),
              [](const sg::Host* a, const sg::Host* b) { return natural_less(a->get_name(), b->get_name()); });
    engine->seal_platform();  // routes are computed on a sealed platform
    check_routes(c, hosts);
  } else {
    if (c.topology == "star")
      build_star(c);
    else if (c.topology == "full")
      build_full(c);
    else if (c.topology == "torus")
      build_torus(c);
    else if (c.topology == "fat-tree")
      build_fat_tree(c);
    else
      FAST_THROW(core::InvalidArgument, "cluster '{}': unknown topology '{}'", c.source.string(), c.topology);
    for (int i = 0; i < c.hosts; ++i) hosts.push_back(engine->host_by_name(host_name(static_cast<unsigned long>(i))));
    log_host_speeds(c);
    add_speed_profiles(c, hosts);
  }
  for (const ClusterFailure& f : c.failures)
    FAST_ENFORCE(f.host < static_cast<int>(hosts.size()),
                 "cluster '{}': failure of host {}, but the platform has {} hosts", c.source.string(), f.host,
                 hosts.size());
  return hosts;
}

}  // namespace fast::runtime::sim
