#include "fast/topology/mixing.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/error_message.hpp"
#include "fast/core/error.hpp"
#include "fast/topology/builders.hpp"

namespace fast::topology {
namespace {

std::string invalid_message(const std::function<void()>& f) { return fast::testing::error_message<InvalidArgument>(f); }

TEST(Mixing, MetropolisHastingsIsDoublyStochasticAndSymmetric) {
  const std::vector<Graph> graphs{ring(7),      torus2d(3, 4),           star(6), complete(5), binary_tree(11),
                                  hypercube(8), random_regular(12, 3, 5)};
  for (const Graph& g : graphs) {
    const MixingMatrix w = metropolis_hastings(g);
    EXPECT_TRUE(is_doubly_stochastic(w)) << g.size();
    EXPECT_TRUE(is_symmetric(w)) << g.size();
    EXPECT_NO_THROW(check_doubly_stochastic(w));
    // Zero exactly off the graph's edges.
    for (int i = 0; i < g.size(); ++i) {
      for (int j = 0; j < g.size(); ++j) {
        if (i != j && !g.has_edge(i, j)) {
          EXPECT_EQ(w.w(i, j), 0.0);
        }
      }
    }
  }
}

TEST(Mixing, MetropolisHastingsWeightsFollowMaxDegree) {
  // Star with 5 nodes: center degree 4, leaves degree 1 -> w(center, leaf) = 1/5,
  // w(leaf, leaf) = 4/5, w(center, center) = 1 - 4/5 = 1/5.
  const MixingMatrix w = metropolis_hastings(star(5));
  EXPECT_DOUBLE_EQ(w.w(0, 3), 0.2);
  EXPECT_DOUBLE_EQ(w.w(3, 0), 0.2);
  EXPECT_DOUBLE_EQ(w.w(3, 3), 0.8);
  EXPECT_NEAR(w.w(0, 0), 0.2, 1e-15);
  // Ring: every degree 2 -> 1/3 everywhere on the band.
  const MixingMatrix r = metropolis_hastings(ring(6));
  EXPECT_DOUBLE_EQ(r.w(2, 1), 1.0 / 3);
  EXPECT_DOUBLE_EQ(r.w(2, 3), 1.0 / 3);
  EXPECT_NEAR(r.w(2, 2), 1.0 / 3, 1e-15);
  EXPECT_EQ(r.row(2).size(), 6u);
  EXPECT_DOUBLE_EQ(r.row(2)[3], 1.0 / 3);
}

// One row without the matrix, in the order of the neighbour list given: the same closed forms.
TEST(Mixing, MetropolisHastingsRowMatchesTheClosedFormInTheOrderGiven) {
  const Graph s = star(5);
  const MixingRow center = metropolis_hastings_row(s, 0, std::vector<int>{4, 1, 3, 2});
  ASSERT_EQ(center.neighbors.size(), 4u);
  for (double w : center.neighbors) EXPECT_DOUBLE_EQ(w, 0.2);
  EXPECT_NEAR(center.self, 0.2, 1e-15);
  const MixingRow leaf = metropolis_hastings_row(s, 3, std::vector<int>{0});
  ASSERT_EQ(leaf.neighbors.size(), 1u);
  EXPECT_DOUBLE_EQ(leaf.neighbors[0], 0.2);
  EXPECT_DOUBLE_EQ(leaf.self, 0.8);
  // A torus of 3 x 4 (degree 4): 1/5 to each neighbour and to itself.
  const Graph t = torus2d(3, 4);
  const MixingRow row = metropolis_hastings_row(t, 5, t.neighbors_in(5));
  ASSERT_EQ(row.neighbors.size(), 4u);
  for (double w : row.neighbors) EXPECT_DOUBLE_EQ(w, 0.2);
  EXPECT_NEAR(row.self, 0.2, 1e-15);
}

TEST(Mixing, MetropolisHastingsRejectsDirectedGraph) {
  const std::string what = invalid_message([] { metropolis_hastings(exponential(8)); });
  EXPECT_NE(what.find("symmetric"), std::string::npos) << what;
}

TEST(Mixing, UniformNeighborWeightsAreRowStochastic) {
  const MixingMatrix star_w = uniform_neighbor_weights(star(5));
  EXPECT_TRUE(is_row_stochastic(star_w));
  EXPECT_FALSE(is_column_stochastic(star_w));  // column 0 sums to 1/5 + 4 * 1/2
  EXPECT_DOUBLE_EQ(star_w.w(0, 4), 0.2);
  EXPECT_DOUBLE_EQ(star_w.w(4, 0), 0.5);
  EXPECT_DOUBLE_EQ(star_w.w(4, 4), 0.5);
  // Exponential graph on 8 nodes: regular in and out (degree 3), so doubly stochastic.
  const MixingMatrix e = uniform_neighbor_weights(exponential(8));
  EXPECT_TRUE(is_doubly_stochastic(e));
  EXPECT_FALSE(is_symmetric(e));
  EXPECT_DOUBLE_EQ(e.w(5, 5), 0.25);
  EXPECT_DOUBLE_EQ(e.w(5, 1), 0.25);  // 5 + 4 mod 8
  EXPECT_EQ(e.w(1, 5), 0.25);         // 1 + 4
  EXPECT_EQ(e.w(1, 0), 0.0);
  // Transposed gives the column-stochastic push-sum form.
  EXPECT_TRUE(is_column_stochastic(star_w.transposed()));
}

TEST(Mixing, CheckDoublyStochasticNamesFailingRowOrColumn) {
  MixingMatrix w(4, std::vector<double>(16, 0.25));
  EXPECT_NO_THROW(check_doubly_stochastic(w));
  w.w(3, 3) = 0.15;  // row 3 and column 3 sum to 0.9
  std::string what = invalid_message([&] { check_doubly_stochastic(w); });
  EXPECT_NE(what.find("row 3 sums to 0.9"), std::string::npos) << what;
  EXPECT_NE(what.find("expected 1 within 1e-12"), std::string::npos) << what;

  // Rows fine, column 0 and 1 off: swap mass within row 2.
  MixingMatrix c(4, std::vector<double>(16, 0.25));
  c.w(2, 0) = 0.35;
  c.w(2, 1) = 0.15;
  EXPECT_TRUE(is_row_stochastic(c));
  what = invalid_message([&] { check_doubly_stochastic(c); });
  EXPECT_NE(what.find("column 0 sums to 1.1"), std::string::npos) << what;

  // Negative entry with correct sums.
  MixingMatrix neg(2, {1.5, -0.5, -0.5, 1.5});
  what = invalid_message([&] { check_doubly_stochastic(neg); });
  EXPECT_NE(what.find("entry (0, 1) is -0.5"), std::string::npos) << what;
}

TEST(Mixing, CheckConnectedRejectsTwoRings) {
  Graph two_rings(8);  // 0-1-2-3-0 and 4-5-6-7-4
  for (int base : {0, 4}) {
    for (int i = 0; i < 4; ++i) two_rings.add_undirected(base + i, base + (i + 1) % 4);
  }
  const std::string what = invalid_message([&] { check_connected(two_rings); });
  EXPECT_NE(what.find("not connected"), std::string::npos) << what;
  EXPECT_NE(what.find("node 4"), std::string::npos) << what;
  EXPECT_NO_THROW(check_connected(ring(8)));
  EXPECT_NO_THROW(check_connected(exponential(8)));

  Graph one_way(3);  // 0 -> 1 -> 2: every node reachable from 0, 0 from none
  one_way.add_edge(0, 1);
  one_way.add_edge(1, 2);
  EXPECT_NE(invalid_message([&] { check_connected(one_way); }).find("strongly"), std::string::npos);
}

TEST(Mixing, MatrixRejectsWrongShapeAndIndex) {
  EXPECT_THROW(MixingMatrix(3, std::vector<double>(8, 0.0)), InvalidArgument);
  MixingMatrix w(3);
  EXPECT_THROW(w.w(3, 0), InvalidArgument);
  EXPECT_THROW(w.row(-1), InvalidArgument);
}

}  // namespace
}  // namespace fast::topology
