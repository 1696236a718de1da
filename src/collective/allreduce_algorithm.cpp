#include "fast/collective/allreduce_algorithm.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/core/suggest.hpp"

namespace fast::collective {

namespace {

constexpr std::array<std::pair<AllreduceAlgorithm, std::string_view>, 5> kNames{{
    {AllreduceAlgorithm::automatic, "auto"},
    {AllreduceAlgorithm::ring, "ring"},
    {AllreduceAlgorithm::recursive_doubling, "recursive-doubling"},
    {AllreduceAlgorithm::halving_doubling, "halving-doubling"},
    {AllreduceAlgorithm::tree, "tree"},
}};

int floor_log2(int n) {
  int k = 0;
  while ((2 << k) <= n) ++k;
  return k;
}

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

}  // namespace

std::string_view name_of(AllreduceAlgorithm algorithm) {
  for (const auto& [a, name] : kNames)
    if (a == algorithm) return name;
  return "unknown";
}

std::vector<std::string> allreduce_algorithm_names() {
  std::vector<std::string> out;
  for (const auto& entry : kNames) out.emplace_back(entry.second);
  return out;
}

AllreduceAlgorithm parse_allreduce_algorithm(std::string_view name, std::string_view what) {
  for (const auto& [a, n] : kNames)
    if (n == name) return a;
  const std::vector<std::string> names = allreduce_algorithm_names();
  FAST_THROW(core::InvalidArgument, "{}: expected one of {}, got '{}'{}", what, fmt::join(names, ", "), name,
             core::did_you_mean(name, names));
}

runtime::NetworkModel default_network() {
  // Fitted to benchmark (a) (docs/collectives.md): the threads runtime on the 2-core reference
  // machine, 2 and 4 workers, where recursive doubling wins below about 32 KiB and the ring above.
  // latency / local cost per byte = 32 KB sets that crossing; bytes move at cache speed.
  return {.latency_seconds = 2e-6, .bandwidth_bytes_per_second = 16e9, .local_bytes_per_second = 16e9};
}

namespace {

// The quantities every formula uses: n members, p = 2^lg the largest power of two <= n, f = 1 when
// n is not a power of two (folding: two extra exchanges of m bytes), else 0.
struct Shape {
  int lg;
  double n, p, f;
  explicit Shape(int members) : lg(floor_log2(members)), n(members), p(1 << lg), f(members == (1 << lg) ? 0.0 : 1.0) {}
};

// Inverse bandwidths: beta per byte sent, gamma per byte of a local pass (0: passes are free).
double beta_of(const runtime::NetworkModel& net) { return 1.0 / net.bandwidth_bytes_per_second; }
double gamma_of(const runtime::NetworkModel& net) {
  return net.local_bytes_per_second > 0 ? 1.0 / net.local_bytes_per_second : 0.0;
}

constexpr std::array<AllreduceAlgorithm, 4> kOrder{AllreduceAlgorithm::ring, AllreduceAlgorithm::halving_doubling,
                                                   AllreduceAlgorithm::recursive_doubling, AllreduceAlgorithm::tree};

}  // namespace

// Latency-bandwidth model: a message of b bytes costs alpha + b beta (alpha the latency, beta the
// inverse bandwidth); a local pass adding b received bytes into the data costs b gamma.
double predicted_seconds(AllreduceAlgorithm algorithm, std::size_t bytes, int members,
                         const runtime::NetworkModel& network) {
  FAST_ENFORCE(members >= 1, "predicted_seconds: members must be >= 1, got {}", members);
  FAST_ENFORCE(network.bandwidth_bytes_per_second > 0 && network.latency_seconds >= 0,
               "predicted_seconds: the network needs a positive bandwidth and a latency >= 0");
  if (members == 1) return 0;
  const Shape s(members);
  const double m = static_cast<double>(bytes);
  const double alpha = network.latency_seconds, beta = beta_of(network), gamma = gamma_of(network);
  switch (algorithm) {
    case AllreduceAlgorithm::ring: return 2 * (s.n - 1) * alpha + 2 * (s.n - 1) / s.n * m * beta;
    case AllreduceAlgorithm::recursive_doubling:
      return (s.lg + 2 * s.f) * (alpha + m * beta) + (s.lg + s.f) * m * gamma;
    case AllreduceAlgorithm::halving_doubling:
      return (2 * s.lg + 2 * s.f) * alpha + (2 * (s.p - 1) / s.p + 2 * s.f) * m * beta +
             ((s.p - 1) / s.p + s.f) * m * gamma;
    case AllreduceAlgorithm::tree: return 2 * ceil_log2(members) * (alpha + m * beta) + ceil_log2(members) * m * gamma;
    case AllreduceAlgorithm::automatic: break;
  }
  FAST_THROW(core::InvalidArgument, "predicted_seconds: needs a concrete algorithm, got '{}'", name_of(algorithm));
}

double bytes_sent(AllreduceAlgorithm algorithm, std::size_t bytes, int members) {
  if (members == 1) return 0;
  const Shape s(members);
  const double m = static_cast<double>(bytes);
  switch (algorithm) {
    case AllreduceAlgorithm::ring: return 2 * (s.n - 1) / s.n * m;
    case AllreduceAlgorithm::recursive_doubling: return (s.lg + s.f) * m;
    case AllreduceAlgorithm::halving_doubling: return (2 * (s.p - 1) / s.p + s.f) * m;
    case AllreduceAlgorithm::tree: return ceil_log2(members) * m;  // the root, broadcasting
    case AllreduceAlgorithm::automatic: break;
  }
  FAST_THROW(core::InvalidArgument, "bytes_sent: needs a concrete algorithm, got '{}'", name_of(algorithm));
}

AllreduceAlgorithm choose_allreduce(std::size_t bytes, int members, const runtime::NetworkModel& network) {
  std::array<double, kOrder.size()> seconds{};
  for (std::size_t k = 0; k < kOrder.size(); ++k) seconds[k] = predicted_seconds(kOrder[k], bytes, members, network);
  const double fastest = *std::min_element(seconds.begin(), seconds.end());
  // Among the algorithms within kNearTie of the fastest, the one that sends the fewest bytes
  // (earlier in kOrder on equal bytes): the model's small differences are not worth more traffic.
  AllreduceAlgorithm best = AllreduceAlgorithm::ring;
  double best_bytes = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < kOrder.size(); ++k) {
    if (seconds[k] > fastest * (1 + kNearTie)) continue;
    const double b = bytes_sent(kOrder[k], bytes, members);
    if (b < best_bytes) best = kOrder[k], best_bytes = b;
  }
  return best;
}

// The chain: (n - 1 + pieces - 1) hops of one piece; the tree: ceil(log2 n) hops of the whole vector.
bool broadcast_by_tree(std::size_t bytes, int members, std::size_t chunk_bytes, const runtime::NetworkModel& network) {
  const double m = static_cast<double>(bytes);
  const double pieces = std::max(1.0, std::ceil(m / static_cast<double>(chunk_bytes)));
  const double chain = (members - 1 + pieces - 1) * (network.latency_seconds + m / pieces * beta_of(network));
  const double tree = ceil_log2(members) * (network.latency_seconds + m * beta_of(network));
  return tree < chain;
}

// The ring: n - 1 steps of one block; Bruck: ceil(log2 n) rounds of the same bytes in all, plus a
// local pass over the n blocks (the final rotation).
bool allgather_by_bruck(std::size_t bytes, int members, const runtime::NetworkModel& network) {
  const double b = static_cast<double>(bytes);
  const double ring = (members - 1) * (network.latency_seconds + b * beta_of(network));
  const double bruck = ceil_log2(members) * network.latency_seconds + (members - 1) * b * beta_of(network) +
                       members * b * gamma_of(network);
  return bruck < ring;
}

}  // namespace fast::collective
