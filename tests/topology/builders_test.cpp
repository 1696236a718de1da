#include "fast/topology/builders.hpp"
#include "common/error_message.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "fast/core/error.hpp"

namespace fast::topology {
namespace {

// Every node has out-degree d and the graph is symmetric.
void expect_regular_undirected(const Graph& g, int d) {
  EXPECT_TRUE(g.is_symmetric());
  for (int i = 0; i < g.size(); ++i) EXPECT_EQ(g.degree(i), d) << "node " << i;
  EXPECT_EQ(g.num_edges(), static_cast<std::size_t>(g.size()) * static_cast<std::size_t>(d));
}

std::string expect_invalid(const std::function<void()>& f) { return fast::testing::error_message<InvalidArgument>(f); }

// A file under the test's temporary directory, removed at destruction.
struct TempFile {
  explicit TempFile(const std::string& content) {
    path = (std::filesystem::temp_directory_path() /
            ("fast_topology_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".txt"))
               .string();
    std::ofstream(path) << content;
  }
  ~TempFile() { std::filesystem::remove(path); }
  std::string path;
};

TEST(Builders, RingHasDegreeTwoAndIsConnected) {
  for (int n = 3; n <= 9; ++n) {
    const Graph g = ring(n);
    expect_regular_undirected(g, 2);
    EXPECT_TRUE(g.is_connected());
  }
  expect_regular_undirected(ring(2), 1);
  expect_regular_undirected(ring(1), 0);
}

TEST(Builders, TorusHasDegreeFourForSidesAtLeastThree) {
  const Graph g = torus2d(3, 5);
  EXPECT_EQ(g.size(), 15);
  expect_regular_undirected(g, 4);
  EXPECT_TRUE(g.is_connected());
  // Node (1, 2) = 7 has neighbors (1,1)=6, (1,3)=8, (0,2)=2, (2,2)=12.
  EXPECT_EQ(g.neighbors_out(7), (std::vector<int>{2, 6, 8, 12}));
}

TEST(Builders, TorusWithShortSidesHasNoDuplicateEdges) {
  expect_regular_undirected(torus2d(1, 5), 2);  // a ring
  expect_regular_undirected(torus2d(2, 4), 3);  // 2 along the length-4 side, 1 across
  expect_regular_undirected(torus2d(2, 2), 2);  // a 4-cycle
  expect_regular_undirected(torus2d(1, 2), 1);
  expect_regular_undirected(torus2d(1, 1), 0);
  EXPECT_TRUE(torus2d(2, 4).is_connected());
  expect_invalid([] { torus2d(0, 3); });
}

TEST(Builders, StarLinksEveryNodeToCenter) {
  const Graph g = star(6, 2);
  EXPECT_TRUE(g.is_symmetric());
  EXPECT_EQ(g.degree(2), 5);
  for (int i : {0, 1, 3, 4, 5}) EXPECT_EQ(g.neighbors_out(i), (std::vector<int>{2}));
  EXPECT_EQ(g.num_edges(), 10u);
  EXPECT_TRUE(g.is_connected());
  const std::string what = expect_invalid([] { star(4, 4); });
  EXPECT_NE(what.find("center 4"), std::string::npos) << what;
}

TEST(Builders, CompleteHasDegreeNMinusOne) {
  for (int n = 1; n <= 7; ++n) expect_regular_undirected(complete(n), n - 1);
}

TEST(Builders, BinaryTreeLinksChildrenToParents) {
  const Graph g = binary_tree(10);
  EXPECT_TRUE(g.is_symmetric());
  EXPECT_EQ(g.num_edges(), 2u * 9u);  // n - 1 undirected edges
  EXPECT_TRUE(g.is_connected());
  EXPECT_EQ(g.neighbors_out(0), (std::vector<int>{1, 2}));
  EXPECT_EQ(g.neighbors_out(1), (std::vector<int>{0, 3, 4}));
  EXPECT_EQ(g.neighbors_out(4), (std::vector<int>{1, 9}));  // one child: 9
  EXPECT_EQ(g.neighbors_out(9), (std::vector<int>{4}));
}

TEST(Builders, HypercubeHasDegreeLog2N) {
  for (int k = 0; k <= 5; ++k) {
    const Graph g = hypercube(1 << k);
    expect_regular_undirected(g, k);
    EXPECT_TRUE(g.is_connected());
  }
  const std::string what = expect_invalid([] { hypercube(6); });
  EXPECT_NE(what.find("n = 6"), std::string::npos) << what;
}

TEST(Builders, ExponentialSendsToPowersOfTwoAhead) {
  const Graph g = exponential(10);  // steps 1, 2, 4, 8
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(g.degree(i), 4);
    EXPECT_EQ(g.in_degree(i), 4);
  }
  EXPECT_EQ(g.neighbors_out(7), (std::vector<int>{1, 5, 8, 9}));  // 8, 9, 11%10, 15%10
  EXPECT_FALSE(g.is_symmetric());
  EXPECT_TRUE(g.is_connected());
  EXPECT_EQ(exponential(16).degree(0), 4);
  EXPECT_EQ(exponential(1).num_edges(), 0u);
}

TEST(Builders, ExponentialPeerCyclesThroughExponents) {
  // n = 8: m = 3 exponents, round r sends to i + 2^(r mod 3).
  for (int round = 0; round < 7; ++round) {
    const Graph g = exponential_peer(8, round);
    const int step = 1 << (round % 3);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(g.neighbors_out(i), (std::vector<int>{(i + step) % 8}));
  }
  // Union over m rounds is the static exponential graph.
  Graph unite(8);
  for (int round = 0; round < 3; ++round) {
    for (const auto& [u, v] : exponential_peer(8, round).edges()) unite.add_edge(u, v);
  }
  EXPECT_EQ(unite.edges(), exponential(8).edges());
}

TEST(Builders, RandomRegularIsSimpleRegularAndDeterministicPerSeed) {
  for (const auto& [n, d] : {std::pair{10, 3}, std::pair{16, 4}, std::pair{12, 5}, std::pair{7, 6}}) {
    const Graph g = random_regular(n, d, 42);
    expect_regular_undirected(g, d);  // symmetric, every degree d
    for (int i = 0; i < n; ++i) EXPECT_FALSE(g.has_edge(i, i));
    EXPECT_EQ(random_regular(n, d, 42).edges(), g.edges());
  }
  // Different seeds give different graphs (count how many of 5 differ from seed 1).
  const auto base = random_regular(20, 3, 1).edges();
  int different = 0;
  for (std::uint64_t seed = 2; seed <= 6; ++seed) different += random_regular(20, 3, seed).edges() != base;
  EXPECT_GE(different, 4);
}

TEST(Builders, RandomRegularRejectsOddDegreeSumAndTooLargeDegree) {
  std::string what = expect_invalid([] { random_regular(5, 3, 0); });
  EXPECT_NE(what.find("n * d must be even"), std::string::npos) << what;
  what = expect_invalid([] { random_regular(4, 4, 0); });
  EXPECT_NE(what.find("d = 4"), std::string::npos) << what;
}

TEST(Builders, EdgeListFileReadsEdgesAndComments) {
  TempFile file("# a square\n0 1\n1 2  # inline comment\n\n2 3\n3 0\n");
  const Graph g = from_edge_list_file(file.path);
  EXPECT_EQ(g.size(), 4);
  expect_regular_undirected(g, 2);
  EXPECT_EQ(from_edge_list_file(file.path, 6).size(), 6);
  EXPECT_EQ(make_topology("file:" + file.path, 4, 0).edges(), g.edges());
}

TEST(Builders, EdgeListFileRejectsBadLineNamingFileAndLine) {
  TempFile file("0 1\n1 x\n");
  std::string what = expect_invalid([&] { from_edge_list_file(file.path); });
  EXPECT_NE(what.find(file.path), std::string::npos) << what;
  EXPECT_NE(what.find("line 2"), std::string::npos) << what;

  TempFile three("0 1\n\n1 2 3\n");
  what = expect_invalid([&] { from_edge_list_file(three.path); });
  EXPECT_NE(what.find("line 3"), std::string::npos) << what;

  TempFile range("0 1\n1 9\n");
  what = expect_invalid([&] { from_edge_list_file(range.path, 4); });
  EXPECT_NE(what.find("line 2"), std::string::npos) << what;

  EXPECT_THROW(from_edge_list_file("/nonexistent/fast_edges.txt"), IoError);
  // A relative path that is not there is named with the folder it was looked for in.
  try {
    from_edge_list_file("fast_no_such_edges.txt");
    ADD_FAILURE() << "a missing edge list was read";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("edge list 'fast_no_such_edges.txt': does not exist (relative to the "
                                         "working directory " +
                                         std::filesystem::current_path().string() + ")"),
              std::string::npos)
        << e.what();
  }
}

TEST(Builders, MakeTopologyParsesSpecs) {
  EXPECT_EQ(make_topology("ring", 8).edges(), ring(8).edges());
  EXPECT_EQ(make_topology("torus2d:2x4", 8).edges(), torus2d(2, 4).edges());
  EXPECT_EQ(make_topology("torus2d", 16).edges(), torus2d(4, 4).edges());
  EXPECT_EQ(make_topology("torus2d", 12).edges(), torus2d(3, 4).edges());
  EXPECT_EQ(make_topology("torus2d", 7).edges(), torus2d(1, 7).edges());
  EXPECT_EQ(make_topology("star", 5).edges(), star(5).edges());
  EXPECT_EQ(make_topology("star:3", 5).edges(), star(5, 3).edges());
  EXPECT_EQ(make_topology("complete", 5).edges(), complete(5).edges());
  EXPECT_EQ(make_topology("tree", 9).edges(), binary_tree(9).edges());
  EXPECT_EQ(make_topology("hypercube", 8).edges(), hypercube(8).edges());
  EXPECT_EQ(make_topology("exponential", 8).edges(), exponential(8).edges());
  EXPECT_EQ(make_topology("random-regular:3", 10, 7).edges(), random_regular(10, 3, 7).edges());
  expect_invalid([] { make_topology("torus2d:3x3", 8); });
  expect_invalid([] { make_topology("torus2d:3by3", 9); });
  expect_invalid([] { make_topology("ring:4", 8); });
  expect_invalid([] { make_topology("random-regular", 8); });
  EXPECT_EQ(expect_invalid([] { make_topology("torus2d:3by3", 9); }),
            "topology spec 'torus2d:3by3': ROWS (value 1 of torus2d[:ROWS[xCOLS]]) expects an integer in [1, "
            "2147483647], got '3by3'");
  // One side given: the other is n divided by it (config.md's default of cols), which must divide.
  EXPECT_EQ(make_topology("torus2d:3", 9).edges(), torus2d(3, 3).edges());
  EXPECT_EQ(make_topology("torus2d:2", 8).edges(), torus2d(2, 4).edges());
  EXPECT_EQ(expect_invalid([] { make_topology("torus2d:3", 8); }),
            "topology 'torus2d:3': rows = 3 does not divide the 8 workers");
  EXPECT_EQ(expect_invalid([] { make_topology("torus2d:3x3x1", 9); }),
            "topology spec 'torus2d:3x3x1': torus2d takes at most 2 values (torus2d[:ROWS[xCOLS]]), got '3x3x1'");
  EXPECT_EQ(expect_invalid([] { make_topology("ring:4", 8); }),
            "topology spec 'ring:4': ring takes no parameters, got '4'");
  EXPECT_EQ(expect_invalid([] { make_topology("random-regular", 8); }),
            "topology spec 'random-regular': random-regular needs degree (random-regular:DEGREE)");
  EXPECT_EQ(expect_invalid([] { make_topology("star:-1", 8); }),
            "topology spec 'star:-1': CENTER (value 1 of star[:CENTER]) expects an integer in [0, 2147483647], got '-1'");
  EXPECT_NE(expect_invalid([] {
              make_topology("star:8", 8);
            }).find("topology 'star:8': the centre 8 is not a worker (workers 0 to 7)"),
            std::string::npos);
}

TEST(Builders, MakeTopologyRejectsUnknownNameListingAllowedNames) {
  const std::string what = expect_invalid([] { make_topology("moebius", 8); });
  EXPECT_NE(what.find("topology spec 'moebius': unknown name 'moebius', expected one of: ring, torus2d"),
            std::string::npos)
      << what;
  for (const auto& name : topology_names()) EXPECT_NE(what.find(name), std::string::npos) << name;
  EXPECT_EQ(topology_names().size(), 9u);
}

// A schedule's kind where a static graph is expected is named as such, with the static kinds the
// caller takes: every one for make_topology; for a strategy that needs an undirected graph
// (make_undirected_connected), those not declared directed, which it would refuse in turn.
TEST(Builders, AScheduleKindIsRefusedOfferingTheStaticKindsTheCallerTakes) {
  const std::string any = expect_invalid([] { make_topology("exponential-peer", 8); });
  EXPECT_EQ(any,
            "topology 'exponential-peer': a time-varying schedule, which gosgd takes; this strategy needs a static "
            "graph, one of: ring, torus2d, star, complete, tree, hypercube, exponential, random-regular, file");
  const std::string undirected = expect_invalid([] { make_undirected_connected("random-peer", 8, 0, "dpsgd", "why"); });
  EXPECT_EQ(undirected,
            "topology 'random-peer': a time-varying schedule, which gosgd takes; dpsgd needs a static "
            "undirected graph, one of: ring, torus2d, star, complete, tree, hypercube, random-regular, file");
  // Every kind it offers is one it takes (the edge-list file aside: its direction is the file's).
  for (const std::string spec : {"ring", "torus2d", "star", "complete", "tree", "hypercube", "random-regular:3"})
    EXPECT_TRUE(make_undirected_connected(spec, 8, 1, "dpsgd", "why").is_symmetric()) << spec;
  EXPECT_NE(expect_invalid([] {
              make_undirected_connected("exponential", 8, 0, "dpsgd", "its mixing");
            }).find("dpsgd: topology 'exponential' is directed; its mixing"),
            std::string::npos);
}

}  // namespace
}  // namespace fast::topology
