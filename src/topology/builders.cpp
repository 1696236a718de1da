#include "fast/topology/builders.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/core/file_status.hpp"
#include "fast/core/parse.hpp"
#include "fast/core/random.hpp"
#include "fast/core/spec.hpp"
#include "fast/topology/schedule.hpp"

namespace fast::topology {

namespace {

bool is_power_of_two(int n) { return n >= 1 && (n & (n - 1)) == 0; }

// Number of k >= 0 with 2^k < n, i.e. ceil(log2 n) (0 for n = 1).
int exponent_count(int n) {
  int m = 0;
  while ((std::int64_t{1} << m) < n) ++m;
  return m;
}

// One attempt at pairing the half-edges into a simple graph; false when it got stuck.
bool try_random_regular(int n, int d, core::SplitMix64& rng, Graph& out) {
  std::vector<int> points;
  points.reserve(static_cast<std::size_t>(n) * static_cast<std::size_t>(d));
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < d; ++k) points.push_back(i);
  }
  Graph g(n);
  while (!points.empty()) {
    // Draw random pairs of remaining half-edges; give up on this attempt after many rejections
    // (the remaining half-edges may admit no simple pairing at all).
    bool paired = false;
    for (int tries = 0; tries < 200 && !paired; ++tries) {
      const std::size_t a = rng.below(points.size());
      const std::size_t b = rng.below(points.size());
      const int u = points[a];
      const int v = points[b];
      if (a == b || u == v || g.has_edge(u, v)) continue;
      g.add_undirected(u, v);
      // Remove a and b (larger index first, so the smaller one stays valid).
      const std::size_t hi = std::max(a, b);
      const std::size_t lo = std::min(a, b);
      points[hi] = points.back();
      points.pop_back();
      points[lo] = points.back();
      points.pop_back();
      paired = true;
    }
    if (!paired) return false;
  }
  out = std::move(g);
  return true;
}

int parse_int(const std::string& text, const std::string& what) { return core::parse_int<int>(text, what); }

constexpr double kMaxInt = 2147483647.0;  // the node counts and ids of a spec are ints

}  // namespace

Graph ring(int n) {
  FAST_ENFORCE(n >= 1, "ring: n must be >= 1, got {}", n);
  Graph g(n);
  for (int i = 0; i < n && n > 1; ++i) g.add_undirected(i, (i + 1) % n);
  return g;
}

Graph torus2d(int rows, int cols) {
  FAST_ENFORCE(rows >= 1 && cols >= 1, "torus2d: rows and cols must be >= 1, got {}x{}", rows, cols);
  Graph g(rows * cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const int node = r * cols + c;
      const int right = r * cols + (c + 1) % cols;
      const int down = ((r + 1) % rows) * cols + c;
      // A dimension of length 1 wraps onto the node itself; of length 2 both ways reach the same
      // neighbor, which the edge set stores once.
      if (right != node) g.add_undirected(node, right);
      if (down != node) g.add_undirected(node, down);
    }
  }
  return g;
}

Graph star(int n, int center) {
  FAST_ENFORCE(n >= 1, "star: n must be >= 1, got {}", n);
  FAST_ENFORCE(center >= 0 && center < n, "star: center {} out of range [0, {})", center, n);
  Graph g(n);
  for (int i = 0; i < n; ++i) {
    if (i != center) g.add_undirected(center, i);
  }
  return g;
}

Graph complete(int n) {
  FAST_ENFORCE(n >= 1, "complete: n must be >= 1, got {}", n);
  Graph g(n);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) g.add_undirected(i, j);
  }
  return g;
}

Graph binary_tree(int n) {
  FAST_ENFORCE(n >= 1, "binary_tree: n must be >= 1, got {}", n);
  Graph g(n);
  for (int i = 1; i < n; ++i) g.add_undirected(i, (i - 1) / 2);
  return g;
}

Graph hypercube(int n) {
  FAST_ENFORCE(is_power_of_two(n), "hypercube: n must be a power of two, got n = {}", n);
  Graph g(n);
  for (int i = 0; i < n; ++i) {
    for (int bit = 1; bit < n; bit <<= 1) g.add_edge(i, i ^ bit);
  }
  return g;
}

Graph exponential(int n) {
  FAST_ENFORCE(n >= 1, "exponential: n must be >= 1, got {}", n);
  Graph g(n);
  for (int i = 0; i < n; ++i) {
    for (std::int64_t step = 1; step < n; step <<= 1) {
      g.add_edge(i, static_cast<int>((i + step) % n));
    }
  }
  return g;
}

Graph exponential_peer(int n, std::int64_t round) {
  FAST_ENFORCE(n >= 1, "exponential_peer: n must be >= 1, got {}", n);
  FAST_ENFORCE(round >= 0, "exponential_peer: round must be >= 0, got {}", round);
  Graph g(n);
  const int m = exponent_count(n);
  if (m == 0) return g;
  const std::int64_t step = std::int64_t{1} << (round % m);
  for (int i = 0; i < n; ++i) g.add_edge(i, static_cast<int>((i + step) % n));
  return g;
}

Graph random_regular(int n, int d, std::uint64_t seed) {
  FAST_ENFORCE(n >= 1, "random_regular: n must be >= 1, got {}", n);
  FAST_ENFORCE(d >= 0 && d < n, "random_regular: degree d must satisfy 0 <= d < n, got d = {}, n = {}", d, n);
  FAST_ENFORCE((static_cast<std::int64_t>(n) * d) % 2 == 0,
               "random_regular: n * d must be even, got n = {}, d = {} (n * d = {})", n, d,
               static_cast<std::int64_t>(n) * d);
  // A dense graph is the complement of a sparse one: the pairing below gets stuck more and more often
  // as d nears n - 1 (42-regular on 45 nodes took seconds), while the complement of a uniformly
  // drawn (n-1-d)-regular graph is a uniformly drawn d-regular one (n(n-1-d) is even as n*d is).
  if (2 * d > n - 1) {
    const Graph sparse = random_regular(n, n - 1 - d, seed);
    Graph dense(n);
    for (int u = 0; u < n; ++u)
      for (int v = u + 1; v < n; ++v)
        if (!sparse.has_edge(u, v)) dense.add_undirected(u, v);
    return dense;
  }
  core::SplitMix64 rng(seed);
  Graph g(n);
  constexpr int kMaxAttempts = 10000;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    if (try_random_regular(n, d, rng, g)) return g;
  }
  FAST_THROW(InvalidArgument, "random_regular: no simple {}-regular graph on {} nodes found in {} attempts", d, n,
             kMaxAttempts);
}

Graph from_edge_list_file(const std::string& path, int n_hint) {
  // A folder opens as an empty stream: say what it is rather than "not connected".
  const std::filesystem::file_status status = core::file_status_of(path, "edge list");
  if (std::filesystem::is_directory(status))
    FAST_THROW(InvalidArgument, "edge list '{}': is a folder; expected a file of 'i j' lines", path);
  if (!std::filesystem::exists(status))
    FAST_THROW(IoError, "edge list '{}': does not exist{}", path, core::relative_to_note(path));
  std::ifstream in(path);
  if (!in) FAST_THROW(IoError, "edge list '{}': cannot open file ({})", path, std::strerror(errno));
  std::vector<std::pair<int, int>> edges;
  int max_id = -1;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::vector<std::string> tokens;
    for (std::string token; fields >> token;) tokens.push_back(token);
    if (tokens.empty()) continue;
    const std::string where = fmt::format("edge list '{}' line {}", path, line_no);
    FAST_ENFORCE(tokens.size() == 2, "{}: expected 'u v', got '{}'", where, line);
    const int u = parse_int(tokens[0], where);
    const int v = parse_int(tokens[1], where);
    FAST_ENFORCE(u >= 0 && v >= 0, "{}: node ids must be >= 0, got {} {}", where, u, v);
    FAST_ENFORCE(u != v, "{}: self-loop {} {} not allowed", where, u, v);
    if (n_hint > 0) {
      FAST_ENFORCE(u < n_hint && v < n_hint,
                   "{}: node id out of range [0, {}) (one node per worker: {} workers), got {} {}", where, n_hint,
                   n_hint, u, v);
    }
    max_id = std::max({max_id, u, v});
    edges.emplace_back(u, v);
  }
  const int n = n_hint > 0 ? n_hint : max_id + 1;
  FAST_ENFORCE(n >= 1, "edge list '{}': no edges and no node count given", path);
  Graph g(n);
  for (const auto& [u, v] : edges) g.add_undirected(u, v);
  return g;
}

const core::SpecFamily& topology_family() {
  using core::Setting;
  static const core::SpecFamily family(
      "topology", core::SpecSyntax::positional,
      {{"ring", "each node linked to the next, cyclically"},
       {"torus2d",
        "a ROWS x COLS wrap-around grid, ROWS * COLS = n",
        {Setting::integer("rows", 1, "rows of the grid.").at_least(1).at_most(kMaxInt).default_shown("most square"),
         Setting::integer("cols", 1, "columns of the grid.").at_least(1).at_most(kMaxInt).default_shown("n / rows")},
        0,
        'x'},
       {"star",
        "every node linked to the centre",
        {Setting::integer("center", 0, "the centre node, < n.").at_least(0).at_most(kMaxInt)}},
       {"complete", "every pair linked"},
       {"tree", "a binary tree in heap order"},
       {"hypercube", "node i linked to i xor 2^k (n a power of two)"},
       {.name = "exponential", .help = "node i sends to i + 2^k mod n (directed)", .traits = {"directed"}},
       {"random-regular",
        "a uniformly drawn simple DEGREE-regular graph (n * DEGREE even)",
        {Setting::integer("degree", 0, "edges per node, < n.").at_least(0).at_most(kMaxInt)},
        1},
       {"file", "the edges of a file of 'u v' lines", {Setting::string("path", "", "the edge list file.")}, 1}});
  return family;
}

const std::vector<std::string>& topology_names() {
  static const std::vector<std::string> names = topology_family().names();
  return names;
}

namespace {
// A time-varying schedule's kind where a static graph is expected (dpsgd, adpsgd, acid): named as
// such, rather than as an unknown name with a near static one suggested; the kinds offered are
// those the caller takes (without the ones declared directed where it needs an undirected graph).
void refuse_schedule_kind(const std::string& spec, bool undirected, std::string_view user = {}) {
  if (schedule_family().find(core::spec_name(spec)) == nullptr) return;
  std::vector<std::string> offered;
  for (const core::SpecForm& form : topology_family().forms())
    if (!undirected || !form.has_trait("directed")) offered.push_back(form.name);
  FAST_THROW(core::InvalidArgument,
             "topology '{}': a time-varying schedule, which gosgd takes; {} needs a static{} graph, one of: {}", spec,
             user.empty() ? std::string_view("this strategy") : user, undirected ? " undirected" : "",
             fmt::join(offered, ", "));
}
}  // namespace

Graph make_undirected_connected(const std::string& spec, int n, std::uint64_t seed, std::string_view user,
                                std::string_view why_undirected) {
  refuse_schedule_kind(spec, /*undirected=*/true, user);
  Graph graph = make_topology(spec, n, seed);
  FAST_ENFORCE(graph.is_symmetric(), "{}: topology '{}' is directed; {}", user, spec, why_undirected);
  FAST_ENFORCE(
      graph.is_connected(),
      "{}: topology '{}' is disconnected on {} workers; the replicas of different components would never agree", user,
      spec, n);
  return graph;
}

Graph make_topology(const std::string& spec, int n, std::uint64_t seed) {
  refuse_schedule_kind(spec, /*undirected=*/false);
  const core::ParsedSpec p = topology_family().parse(spec);
  const std::string& name = p.name();
  if (name == "file") return from_edge_list_file(p.string("path"), n);
  FAST_ENFORCE(n >= 1, "topology '{}': n must be >= 1, got {}", spec, n);
  if (name == "ring") return ring(n);
  if (name == "complete") return complete(n);
  if (name == "tree") return binary_tree(n);
  if (name == "hypercube") {
    FAST_ENFORCE(is_power_of_two(n),
                 "topology '{}': a hypercube needs a power of two of workers (2, 4, 8, ...), got n = {}", spec, n);
    return hypercube(n);
  }
  if (name == "exponential") return exponential(n);
  if (name == "star") {
    FAST_ENFORCE(p.integer("center") < n, "topology '{}': the centre {} is not a worker (workers 0 to {})", spec,
                 p.integer("center"), n - 1);
    return star(n, static_cast<int>(p.integer("center")));
  }
  if (name == "random-regular") {
    const auto d = p.integer("degree");
    FAST_ENFORCE(d < n && (static_cast<std::int64_t>(n) * d) % 2 == 0,
                 "topology '{}': a {}-regular graph of {} workers needs a degree below the workers and an even "
                 "workers x degree",
                 spec, d, n);
    return random_regular(n, static_cast<int>(d), seed);
  }
  // torus2d: no sides (the most square grid), the rows (cols = n / rows) or both.
  if (!p.has("rows")) {
    int rows = 1;
    for (int r = 1; r * r <= n; ++r) {
      if (n % r == 0) rows = r;
    }
    return torus2d(rows, n / rows);
  }
  const auto rows = p.integer("rows");
  if (!p.has("cols") && n % rows != 0)
    FAST_THROW(InvalidArgument, "topology '{}': rows = {} does not divide the {} workers", spec, rows, n);
  const auto cols = p.has("cols") ? p.integer("cols") : n / rows;
  FAST_ENFORCE(rows * cols == n, "topology '{}': rows * cols must equal n, got {} * {} = {} vs n = {}", spec, rows,
               cols, rows * cols, n);
  return torus2d(static_cast<int>(rows), static_cast<int>(cols));
}

}  // namespace fast::topology
