#include "fast/collective/allreduce_algorithm.hpp"

#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"

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
  FAST_THROW(core::InvalidArgument, "{}: expected one of {}, got '{}'", what,
             fmt::join(allreduce_algorithm_names(), ", "), name);
}

runtime::NetworkModel default_network() {
  // Fitted to benchmark (a) (docs/collectives.md): the threads runtime on the 2-core reference
  // machine, 2 and 4 workers, where recursive doubling wins below about 32 KiB and the ring above.
  // latency / local cost per byte = 32 KB sets that crossing; bytes move at cache speed.
  return {.latency_seconds = 2e-6, .bandwidth_bytes_per_second = 16e9, .local_bytes_per_second = 16e9};
}

// Latency-bandwidth model: a message of b bytes costs alpha + b beta (alpha the latency, beta the
// inverse bandwidth); a local pass adding b received bytes into the data costs b gamma.
// n members, p = 2^floor(log2 n), f = 1 when n != p (folding: two extra exchanges of m bytes).
double predicted_seconds(AllreduceAlgorithm algorithm, std::size_t bytes, int members,
                         const runtime::NetworkModel& network) {
  FAST_ENFORCE(members >= 1, "predicted_seconds: members must be >= 1, got {}", members);
  FAST_ENFORCE(network.bandwidth_bytes_per_second > 0 && network.latency_seconds >= 0,
               "predicted_seconds: the network needs a positive bandwidth and a latency >= 0");
  if (members == 1) return 0;
  const double n = members;
  const double m = static_cast<double>(bytes);
  const double alpha = network.latency_seconds;
  const double beta = 1.0 / network.bandwidth_bytes_per_second;
  const double gamma = network.local_bytes_per_second > 0 ? 1.0 / network.local_bytes_per_second : 0.0;
  const int lg = floor_log2(members);
  const double p = static_cast<double>(1 << lg);
  const double f = members == (1 << lg) ? 0.0 : 1.0;
  switch (algorithm) {
    case AllreduceAlgorithm::ring:
      return 2 * (n - 1) * alpha + 2 * (n - 1) / n * m * beta;
    case AllreduceAlgorithm::recursive_doubling:
      return (lg + 2 * f) * (alpha + m * beta) + (lg + f) * m * gamma;
    case AllreduceAlgorithm::halving_doubling:
      return (2 * lg + 2 * f) * alpha + (2 * (p - 1) / p + 2 * f) * m * beta + ((p - 1) / p + f) * m * gamma;
    case AllreduceAlgorithm::tree:
      return 2 * ceil_log2(members) * (alpha + m * beta) + ceil_log2(members) * m * gamma;
    case AllreduceAlgorithm::automatic:
      break;
  }
  FAST_THROW(core::InvalidArgument, "predicted_seconds: needs a concrete algorithm, got '{}'", name_of(algorithm));
}

double bytes_sent(AllreduceAlgorithm algorithm, std::size_t bytes, int members) {
  if (members == 1) return 0;
  const double n = members, m = static_cast<double>(bytes);
  const int lg = floor_log2(members);
  const double p = static_cast<double>(1 << lg);
  const double f = members == (1 << lg) ? 0.0 : 1.0;
  switch (algorithm) {
    case AllreduceAlgorithm::ring: return 2 * (n - 1) / n * m;
    case AllreduceAlgorithm::recursive_doubling: return (lg + f) * m;
    case AllreduceAlgorithm::halving_doubling: return (2 * (p - 1) / p + f) * m;
    case AllreduceAlgorithm::tree: return ceil_log2(members) * m;  // the root, broadcasting
    case AllreduceAlgorithm::automatic: break;
  }
  FAST_THROW(core::InvalidArgument, "bytes_sent: needs a concrete algorithm, got '{}'", name_of(algorithm));
}

AllreduceAlgorithm choose_allreduce(std::size_t bytes, int members, const runtime::NetworkModel& network) {
  constexpr std::array<AllreduceAlgorithm, 4> kOrder{AllreduceAlgorithm::ring, AllreduceAlgorithm::halving_doubling,
                                                     AllreduceAlgorithm::recursive_doubling, AllreduceAlgorithm::tree};
  double fastest = std::numeric_limits<double>::infinity();
  for (AllreduceAlgorithm a : kOrder) fastest = std::min(fastest, predicted_seconds(a, bytes, members, network));
  // Among the algorithms within kNearTie of the fastest, the one that sends the fewest bytes
  // (earlier in kOrder on equal bytes): the model's small differences are not worth more traffic.
  AllreduceAlgorithm best = AllreduceAlgorithm::ring;
  double best_bytes = std::numeric_limits<double>::infinity();
  for (AllreduceAlgorithm a : kOrder) {
    if (predicted_seconds(a, bytes, members, network) > fastest * (1 + kNearTie)) continue;
    const double b = bytes_sent(a, bytes, members);
    if (b < best_bytes) best = a, best_bytes = b;
  }
  return best;
}

}  // namespace fast::collective
