// Cluster descriptions: the TOML keys, their units and their errors; the shipped clusters.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <simgrid/s4u/Engine.hpp>

#include "fast/core/error.hpp"
#include "fast/runtime/cluster.hpp"
#include "fast/runtime/sim/world.hpp"

namespace fast::runtime {
namespace {

TEST(Cluster, ParsesEveryKeyWithUnits) {
  const Cluster c = parse_cluster(R"(
name = "t"
[hosts]
count = 4
speed = "2Gf"
cores = 2
memory_bandwidth = "20GBps"
factors = [1, 2, 3, 4]
[network]
topology = "full"
bandwidth = "8Mbps"
latency = "20ms"
loopback_bandwidth = 5e9
model = "LV08"
[stragglers]
probability = 0.5
factor = 3
period = "500ms"
[[failures]]
host = 2
off = "1.5s"
on = 4
[[speed_profiles]]
host = 1
times = [0, 10]
factors = [1, 0.5]
)",
                                  "t.toml");
  EXPECT_EQ(c.name, "t");
  EXPECT_EQ(c.hosts, 4);
  EXPECT_EQ(c.cores, 2);
  EXPECT_DOUBLE_EQ(c.memory_bandwidth, 2e10);
  EXPECT_EQ(c.speeds, (std::vector<double>{2e9, 4e9, 6e9, 8e9}));
  EXPECT_EQ(c.topology, "full");
  EXPECT_DOUBLE_EQ(c.bandwidth, 1e6);  // 8 Mb/s = 1 MB/s
  EXPECT_DOUBLE_EQ(c.latency, 0.02);
  EXPECT_DOUBLE_EQ(c.loopback_bandwidth, 5e9);
  EXPECT_EQ(c.model, "LV08");
  EXPECT_DOUBLE_EQ(c.straggler_period, 0.5);
  ASSERT_EQ(c.failures.size(), 1u);
  EXPECT_EQ(c.failures[0].host, 2);
  EXPECT_DOUBLE_EQ(c.failures[0].off, 1.5);
  EXPECT_DOUBLE_EQ(c.failures[0].on, 4.0);
  ASSERT_EQ(c.speed_profiles.size(), 1u);
  EXPECT_EQ(c.speed_profiles[0].factors, (std::vector<double>{1, 0.5}));
}

TEST(Cluster, UniformDistributionIsSeededAndInRange) {
  const std::string text = "[hosts]\ncount = 50\nspeed = 1e9\ndistribution = \"uniform:1-5\"\nseed = 9\n";
  const Cluster a = parse_cluster(text, "a.toml");
  const Cluster b = parse_cluster(text, "b.toml");
  EXPECT_EQ(a.speeds, b.speeds);
  for (double s : a.speeds) {
    EXPECT_GE(s, 1e9);
    EXPECT_LE(s, 5e9);
  }
  const Cluster other = parse_cluster("[hosts]\ncount = 50\ndistribution = \"uniform:1-5\"\nseed = 10\n", "c.toml");
  EXPECT_NE(a.speeds, other.speeds);
}

void expect_error(const std::string& text, const std::string& needle) {
  try {
    parse_cluster(text, "bad.toml");
    ADD_FAILURE() << "no error for: " << text;
  } catch (const core::InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bad.toml"), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << "expected '" << needle << "' in: " << what;
  }
}

TEST(Cluster, ErrorsNameFileKeyExpectedAndGot) {
  expect_error("colour = 1", "unknown key 'colour'");
  expect_error("[hosts]\nsize = 3", "unknown key 'hosts.size'");
  expect_error("[hosts]\ncount = \"many\"", "'hosts.count': expected an integer, got the string 'many'");
  expect_error("[hosts]\ncount = 0", "'hosts.count': expected an integer from 1 to 1000000, got 0");
  expect_error("[hosts]\nspeed = \"fast\"", "'hosts.speed': expected a speed (a number with a unit");
  expect_error("[network]\nlatency = \"1\"",
               "'network.latency': the string \"1\" has no unit; expected a duration (a number with a unit among s, "
               "ms, us, ns): a number without quotes is in base units");
  expect_error("[hosts]\nmemory_bandwidth = -1",
               "'hosts.memory_bandwidth': expected a positive memory bandwidth, got -1");
  expect_error("[hosts]\ncount = 2\nfactors = [1]", "'hosts.factors': expected one factor per host (2), got 1");
  expect_error("[hosts]\ndistribution = \"normal:1-2\"", "expected \"uniform:LO-HI\"");
  expect_error("[network]\ntopology = \"ring\"",
               "'network.topology': expected one of star, full, torus, fat-tree, got 'ring'");
  expect_error("[network]\ntopology = \"fat_tree\"", "got 'fat_tree' (did you mean 'fat-tree'?)");
  expect_error("[network]\nbandwidth = \"10 furlongs\"", "'network.bandwidth': expected a bandwidth");
  expect_error("[network]\nlatency = true", "'network.latency': expected a duration");
  expect_error("[network]\nmodel = \"IB\"", "'network.model': expected CM02 or LV08, got 'IB'");
  expect_error("[network]\nbackbone_latency = \"-1ms\"",
               "key 'network.backbone_latency': expected a latency >= 0, got -0.001");
  expect_error("[hosts]\ncount = 6\n[network]\ntopology = \"torus\"\ntorus = [2, 2]",
               "product is the host count 6, got 4");
  // A key of another topology than the file's is refused, not dropped (star is the default).
  expect_error("[network]\ntopology = \"full\"\nbackbone_bandwidth = \"10Mbps\"",
               "key 'network.backbone_bandwidth': a setting of network.topology = \"star\" only, and this file's is "
               "\"full\"");
  expect_error("[network]\ntopology = \"torus\"\nbackbone_latency = \"1s\"",
               "key 'network.backbone_latency': a setting of network.topology = \"star\" only");
  expect_error("[hosts]\ncount = 4\n[network]\ntorus = [7]",
               "key 'network.torus': a setting of network.topology = \"torus\" only, and this file's is \"star\"");
  expect_error("[hosts]\ncount = 4\n[network]\ntopology = \"star\"\nfat_tree = \"2;2,2;1,2;1,2\"",
               "key 'network.fat_tree': a setting of network.topology = \"fat-tree\" only");
  expect_error("[stragglers]\nprobability = 2", "'stragglers.probability': expected a value in [0, 1], got 2");
  expect_error("[stragglers]\nfactor = 0.5", "'stragglers.factor': expected a value >= 1");
  expect_error("[hosts]\ncount = 2\n[[failures]]\nhost = 5\noff = 1",
               "'failures[0].host': expected a host index in [0, 2), got 5");
  expect_error("[[failures]]\nhost = 0", "'failures[0].off': missing");
  expect_error("[[failures]]\nhost = 0\noff = 3\non = 2", "'failures[0].on': expected a time after off (3), got 2");
  // A host off from time 0 would never join the run (its set-up collectives need every worker).
  expect_error("[[failures]]\nhost = 0\noff = 0",
               "'failures[0].off': expected a time > 0, got 0; a host that is off from the start never joins the run");
  expect_error("[[speed_profiles]]\nhost = 0\ntimes = [0]\nfactors = [2]", "expected factors in (0, 1], got 2");
  expect_error("[hosts\ncount = 1", "line 1");
}

TEST(Cluster, MissingFileIsAnIoError) { EXPECT_THROW(load_cluster("/nonexistent/cluster.toml"), core::IoError); }

TEST(Cluster, ShippedClustersLoad) {
  const std::filesystem::path dir = std::filesystem::path(FAST_TEST_SOURCE_DIR) / "clusters";
  const Cluster hpc = load_cluster(dir / "hpc-16.toml");
  EXPECT_EQ(hpc.hosts, 16);
  EXPECT_DOUBLE_EQ(hpc.bandwidth, 1.25e9);
  const Cluster edge = load_cluster(dir / "edge-32.toml");
  EXPECT_EQ(edge.hosts, 32);
  EXPECT_DOUBLE_EQ(edge.latency, 0.02);
  for (double s : edge.speeds) {
    EXPECT_GE(s, 1e10);
    EXPECT_LE(s, 5e10);
  }
  const Cluster cloud = load_cluster(dir / "cloud-64.toml");
  EXPECT_EQ(cloud.hosts, 64);
  EXPECT_GT(cloud.backbone_bandwidth, 0);
}

TEST(Cluster, SimGridPlatformXmlIsAccepted) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "fast_cluster_test_platform.xml";
  {
    std::ofstream out(file);
    out << R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="z" routing="Full">
    <host id="b-10" speed="1Gf"/>
    <host id="b-2" speed="2Gf"/>
    <link id="l" bandwidth="100MBps" latency="1ms"/>
    <route src="b-2" dst="b-10"><link_ctn id="l"/></route>
  </zone>
</platform>
)";
  }
  const Cluster c = load_cluster(file);
  EXPECT_EQ(c.platform_xml, file);
  std::vector<double> done(2);
  sim::World world({.size = 2, .cluster = c});
  world.run([&](Context& ctx) {
    ctx.compute(2e9);  // worker 0 on b-2 (natural order): 1 s; worker 1 on b-10: 2 s
    done[static_cast<std::size_t>(ctx.rank())] = ctx.now();
  });
  EXPECT_NEAR(done[0], 1.0, 1e-9);
  EXPECT_NEAR(done[1], 2.0, 1e-9);
  // Wrapped in a TOML file to fail a host: its hosts are the platform's (2 here), not hosts.count's
  // default of 1; a [hosts] or [network] table beside it is refused rather than half applied.
  const std::filesystem::path wrapper = file.parent_path() / "fast_cluster_test_wrapper.toml";
  std::ofstream(wrapper) << "platform = \"" << file.filename().string() << "\"\n[[failures]]\nhost = 1\noff = 0.5\n";
  const Cluster wrapped = load_cluster(wrapper);
  ASSERT_EQ(wrapped.failures.size(), 1u);
  EXPECT_EQ(wrapped.failures[0].host, 1);
  std::vector<double> lost_at(2, -1);
  sim::World failing({.size = 2, .cluster = wrapped, .tolerate_lost = true});
  failing.run([&](Context& ctx) {
    ctx.compute(2e9);  // host 1 (b-10) turns off at 0.5 s, before its 2 s of compute end
    lost_at[static_cast<std::size_t>(ctx.rank())] = ctx.now();
  });
  EXPECT_NEAR(lost_at[0], 1.0, 1e-9);
  EXPECT_EQ(lost_at[1], -1);
  // The wrapper with `tables` after its platform line: refused naming `needle`, or loaded ("").
  const auto wrap = [&](const std::string& tables, const std::string& needle) {
    std::ofstream(wrapper, std::ios::trunc) << "platform = \"" << file.filename().string() << "\"\n" << tables;
    try {
      const Cluster loaded = load_cluster(wrapper);
      EXPECT_EQ(needle, "") << tables << " was accepted beside platform";
      return loaded;
    } catch (const core::InvalidArgument& e) {
      EXPECT_FALSE(needle.empty()) << tables << " was refused: " << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << tables << ": " << e.what();
    }
    return Cluster{};
  };
  wrap("[hosts]\nmemory_bandwidth = \"1GBps\"\n", "expected no `hosts` beside `platform`");
  wrap("[network]\nmodel = \"LV08\"\nlatency = \"1ms\"\n", "expected only `network.model` beside `platform`");
  EXPECT_EQ(wrap("[network]\nmodel = \"LV08\"\n", "").model, "LV08");  // the one network setting it takes
  std::filesystem::remove(wrapper);
  std::filesystem::remove(file);
}

// A platform file after another simulation of the same process: SimGrid 3.32's engine leaves a
// callback of its own on the process-wide signal that a parsed platform file fires, which crashed
// the next file's parse (seen after a World of 3 hosts); World disconnects what its engine left.
TEST(Cluster, APlatformFileLoadsAfterAnotherSimulationOfTheProcess) {
  const int slots = simgrid::s4u::Engine::on_platform_created.get_slot_count();
  Cluster generated;
  generated.hosts = 3;
  generated.speeds = {1e9, 2e9, 4e9};
  sim::World first({.size = 3, .cluster = generated});
  EXPECT_NEAR(first.run([](Context& ctx) { ctx.compute(4e9); }), 4.0, 1e-9);  // 4, 2 and 1 s
  EXPECT_EQ(simgrid::s4u::Engine::on_platform_created.get_slot_count(), slots);

  const std::filesystem::path file = std::filesystem::temp_directory_path() / "fast_cluster_test_second.xml";
  std::ofstream(file) << "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                         "<platform version=\"4.1\">\n"
                         "<cluster id=\"c\" prefix=\"node-\" suffix=\"\" radical=\"0-1\" speed=\"2Gf\" "
                         "bw=\"125MBps\" lat=\"50us\"/>\n</platform>\n";
  sim::World second({.size = 2, .cluster = load_cluster(file)});
  EXPECT_NEAR(second.run([](Context& ctx) { ctx.compute(1e9); }), 0.5, 1e-9);
  EXPECT_EQ(simgrid::s4u::Engine::on_platform_created.get_slot_count(), slots);
  std::filesystem::remove(file);
}

// SimGrid's platform parser keeps state across engines: after a file it refused, the next platform
// file of the process used to crash it (SIGSEGV). FAST refuses that file instead, naming the cause.
// In a child process (a death test), so that the refusal does not reach the other tests' platforms.
TEST(ClusterDeathTest, PlatformFileAfterARefusedOneIsRefusedNotACrash) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto write = [](const std::string& name, const std::string& body) {
    const std::filesystem::path file = std::filesystem::temp_directory_path() / name;
    std::ofstream(file) << "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                           "<platform version=\"4.1\">\n"
                        << body << "</platform>\n";
    return file;
  };
  const std::filesystem::path bad =
      write("fast_cluster_test_bad.xml", R"(<zone id="z" routing="Full"><host id="a" speed="1Gf"/>)"
                                         R"(<link id="l" bandwidth="oops"/></zone>)");
  const std::filesystem::path good =
      write("fast_cluster_test_good.xml", R"(<cluster id="c" prefix="node-" suffix="" radical="0-1" speed="1Gf" )"
                                          R"(bw="125MBps" lat="50us"/>)");
  auto run = [](const std::filesystem::path& file) {
    sim::World world({.size = 2, .cluster = load_cluster(file)});
    world.run([](Context& ctx) { ctx.compute(1e9); });
  };
  EXPECT_EXIT(
      {
        bool refused_bad = false;
        bool refused_good = false;
        try {
          run(bad);
        } catch (const core::InvalidArgument&) {
          refused_bad = true;
        }
        try {
          run(good);
        } catch (const core::InvalidUsage& e) {
          refused_good = std::string(e.what()).find("new process") != std::string::npos;
        }
        std::exit(refused_bad && refused_good ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  std::filesystem::remove(bad);
  std::filesystem::remove(good);
}

TEST(Cluster, ShippedClustersBuildAndRun) {
  // Each generated topology builds; a worker on every host exchanges with its neighbour.
  for (const std::string& text :
       {std::string("[hosts]\ncount = 4\n[network]\ntopology = \"star\"\nbackbone_bandwidth = 1e9"),
        std::string("[hosts]\ncount = 4\n[network]\ntopology = \"full\""),
        std::string("[hosts]\ncount = 4\n[network]\ntopology = \"torus\"\ntorus = [2, 2]"),
        std::string("[hosts]\ncount = 4\n[network]\ntopology = \"fat-tree\"\nfat_tree = \"2;2,2;1,2;1,1\"")}) {
    const Cluster c = parse_cluster(text, "inline.toml");
    sim::World world({.size = 4, .cluster = c});
    world.run([&](Context& ctx) {
      const Tag tag = make_tag(TagKind::user, 9, 0);
      std::vector<float> out{static_cast<float>(ctx.rank())}, in(1);
      Work s = ctx.send((ctx.rank() + 1) % 4, tag, core::ConstView(std::span<const float>(out)));
      ctx.recv((ctx.rank() + 3) % 4, tag, core::MutableView(std::span<float>(in))).wait();
      s.wait();
      EXPECT_EQ(in[0], static_cast<float>((ctx.rank() + 3) % 4)) << text;
      EXPECT_GT(ctx.now(), 0.0) << text;
    });
  }
}

// Generated from the declarations: every integer key of a cluster file, given a value beyond 32 or
// 64 bits, a negative value, a value one past either end of its declared range or a float, is
// refused with an InvalidArgument naming the file and the key (the TOML line, for a value TOML
// itself cannot hold), unless the value lies in the declared range (a seed of 2^32 + 3), which the
// range check lets through (a host index may still exceed the host count).
TEST(Cluster, EveryIntegerKeyRefusesValuesOutsideItsDeclaredRange) {
  int keys = 0;
  for (const ClusterIntegerKey& k : cluster_integer_keys()) {
    ++keys;
    const std::string key(k.key);
    const std::string field = key.substr(key.rfind('.') + 1, key.find("[]", key.rfind('.')) - key.rfind('.') - 1);
    std::vector<std::string> values = {"4294967299", "9223372036854775808", "-1", "1.5", "-9223372036854775808"};
    if (k.max < std::numeric_limits<std::int64_t>::max()) values.push_back(std::to_string(k.max + 1));
    if (k.min > std::numeric_limits<std::int64_t>::min()) values.push_back(std::to_string(k.min - 1));
    for (const std::string& v : values) {
      // The document that sets only this key: [section] key = v, [section] key = [v] or [[section]] key = v.
      std::string text, shown;
      if (key.find("[].") != std::string::npos) {
        text = fmt::format("[[{}]]\n{} = {}\n", k.section, field, v);
        shown = fmt::format("{}[0].{}", k.section, field);
      } else if (key.ends_with("[]")) {
        // network.torus is a key of the torus topology only (others refuse it).
        const std::string topology = key == "network.torus[]" ? "topology = \"torus\"\n" : "";
        text = fmt::format("[{}]\n{}{} = [{}]\n", k.section, topology, field, v);
        shown = fmt::format("{}.{}[0]", k.section, field);
      } else {
        text = fmt::format("[{}]\n{} = {}\n", k.section, field, v);
        shown = key;
      }
      const bool integer = v.find('.') == std::string::npos && v != "9223372036854775808";
      const bool in_range = integer && std::stoll(v) >= k.min && std::stoll(v) <= k.max;
      try {
        const Cluster c = parse_cluster(text, "hostile.toml");
        EXPECT_TRUE(in_range) << key << " took " << v;
        if (key.ends_with(".seed")) {
          EXPECT_EQ(c.seed, std::stoull(v)) << key;
        }
      } catch (const core::InvalidArgument& e) {
        const std::string what = e.what();
        if (in_range) {
          EXPECT_EQ(what.find("expected an integer"), std::string::npos) << key << " = " << v << ": " << what;
          continue;
        }
        EXPECT_NE(what.find("hostile.toml"), std::string::npos) << what;
        const bool toml_refused = what.find(" line ") != std::string::npos;  // beyond int64: TOML's own error
        EXPECT_NE(what.find(toml_refused ? fmt::format("{} = ", field) : "'" + shown + "'"), std::string::npos)
            << key << " = " << v << ": " << what;
      }
    }
  }
  EXPECT_EQ(keys, 7);
}

}  // namespace
}  // namespace fast::runtime
