#include "fast/topology/graph.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "fast/core/error.hpp"

namespace fast::topology {
namespace {

TEST(Graph, AddEdgeStoresDirectedSetWithSortedNeighbors) {
  Graph g(4);
  EXPECT_TRUE(g.add_edge(0, 3));
  EXPECT_TRUE(g.add_edge(0, 1));
  EXPECT_FALSE(g.add_edge(0, 1));  // already there
  EXPECT_EQ(g.num_edges(), 2u);
  EXPECT_EQ(g.neighbors_out(0), (std::vector<int>{1, 3}));
  EXPECT_EQ(g.neighbors_in(3), (std::vector<int>{0}));
  EXPECT_TRUE(g.neighbors_out(3).empty());
  EXPECT_EQ(g.degree(0), 2);
  EXPECT_EQ(g.in_degree(1), 1);
  EXPECT_TRUE(g.has_edge(0, 3));
  EXPECT_FALSE(g.has_edge(3, 0));
  EXPECT_FALSE(g.is_symmetric());
  EXPECT_EQ(g.edges(), (std::vector<std::pair<int, int>>{{0, 1}, {0, 3}}));
}

TEST(Graph, AddUndirectedStoresBothDirections) {
  Graph g(3);
  EXPECT_TRUE(g.add_undirected(0, 2));
  EXPECT_FALSE(g.add_undirected(2, 0));
  EXPECT_EQ(g.num_edges(), 2u);
  EXPECT_TRUE(g.has_edge(0, 2));
  EXPECT_TRUE(g.has_edge(2, 0));
  EXPECT_TRUE(g.is_symmetric());
}

TEST(Graph, ConnectivityIsStrongForDirectedGraphs) {
  Graph path(3);  // 0 -> 1 -> 2: weakly but not strongly connected
  path.add_edge(0, 1);
  path.add_edge(1, 2);
  EXPECT_FALSE(path.is_connected());
  path.add_edge(2, 0);  // now a directed cycle
  EXPECT_TRUE(path.is_connected());

  Graph split(4);
  split.add_undirected(0, 1);
  split.add_undirected(2, 3);
  EXPECT_FALSE(split.is_connected());
  EXPECT_TRUE(Graph(1).is_connected());
}

TEST(Graph, RejectsBadNodeIdsNamingIdAndSize) {
  Graph g(5);
  try {
    g.add_edge(0, 7);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("7"), std::string::npos) << what;
    EXPECT_NE(what.find("n = 5"), std::string::npos) << what;
  }
  EXPECT_THROW(g.add_undirected(-1, 2), InvalidArgument);
  EXPECT_THROW(g.neighbors_out(5), InvalidArgument);
  EXPECT_THROW(g.degree(-3), InvalidArgument);
  EXPECT_EQ(g.num_edges(), 0u);
}

TEST(Graph, RejectsSelfLoopsAndEmptyGraphs) {
  Graph g(3);
  EXPECT_THROW(g.add_edge(1, 1), InvalidArgument);
  EXPECT_THROW(Graph(0), InvalidArgument);
}

}  // namespace
}  // namespace fast::topology
