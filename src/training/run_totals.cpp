#include "run_totals.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <tuple>

#include "fast/core/error.hpp"

namespace fast::training {

namespace {

using core::ConstView;

// WorkerTotals travel as two fixed-size vectors per worker, one of integers and one of doubles.
// Their layout is written once, by pack(), and read back in the same order by unpack().
struct Packed {
  std::vector<std::int64_t> ints;
  std::vector<double> reals;
};

Packed pack(const WorkerTotals& t) {
  Packed p;
  p.ints = {t.steps,
            t.joined_at,
            t.skipped,
            static_cast<std::int64_t>(t.staleness.count),
            static_cast<std::int64_t>(t.staleness.max),
            static_cast<std::int64_t>(t.compression.raw_bytes),
            static_cast<std::int64_t>(t.compression.wire_bytes),
            static_cast<std::int64_t>(t.compression.messages),
            t.claims,
            t.budget_counter,
            std::bit_cast<std::int64_t>(t.param_hash),
            std::bit_cast<std::int64_t>(t.replica_hash),
            static_cast<std::int64_t>(t.divergence.kind),
            t.divergence.worker,
            t.divergence.step,
            t.stopped_by,
            t.state_bytes};
  for (std::uint64_t b : t.bytes_to) p.ints.push_back(static_cast<std::int64_t>(b));
  for (std::uint64_t b : t.bytes_from) p.ints.push_back(static_cast<std::int64_t>(b));
  p.reals = {t.idle_seconds, t.slowdown_seconds, t.staleness.sum,      t.wall_seconds,
             t.param_norm,   t.divergence.value, t.divergence.accuracy};
  return p;
}

// Reads values in pack()'s order.
template <typename T>
class Reader {
 public:
  explicit Reader(std::span<const T> data) : data_(data) {}
  T next() {
    FAST_ENFORCE(at_ < data_.size(), "gather_totals: packed totals shorter than expected ({} values)", data_.size());
    return data_[at_++];
  }

 private:
  std::span<const T> data_;
  std::size_t at_ = 0;
};

WorkerTotals unpack(std::span<const std::int64_t> ints, std::span<const double> reals, int world) {
  WorkerTotals t;
  Reader<std::int64_t> i(ints);
  t.steps = i.next();
  t.joined_at = i.next();
  t.skipped = i.next();
  t.staleness.count = static_cast<std::uint64_t>(i.next());
  t.staleness.max = static_cast<std::uint64_t>(i.next());
  t.compression.raw_bytes = static_cast<std::uint64_t>(i.next());
  t.compression.wire_bytes = static_cast<std::uint64_t>(i.next());
  t.compression.messages = static_cast<std::uint64_t>(i.next());
  t.claims = i.next();
  t.budget_counter = i.next();
  t.param_hash = std::bit_cast<std::uint64_t>(i.next());
  t.replica_hash = std::bit_cast<std::uint64_t>(i.next());
  t.divergence.kind = static_cast<metrics::DivergenceSign::Kind>(i.next());
  t.divergence.worker = static_cast<int>(i.next());
  t.divergence.step = i.next();
  t.stopped_by = i.next();
  t.state_bytes = i.next();
  t.bytes_to.resize(static_cast<std::size_t>(world));
  t.bytes_from.resize(static_cast<std::size_t>(world));
  for (auto& b : t.bytes_to) b = static_cast<std::uint64_t>(i.next());
  for (auto& b : t.bytes_from) b = static_cast<std::uint64_t>(i.next());
  Reader<double> r(reals);
  t.idle_seconds = r.next();
  t.slowdown_seconds = r.next();
  t.staleness.sum = r.next();
  t.wall_seconds = r.next();
  t.param_norm = r.next();
  t.divergence.value = r.next();
  t.divergence.accuracy = r.next();
  return t;
}

constexpr std::size_t kEventValues = 4;  // model_time, end_time, off_clock, accuracy

// Appends the evaluations to a member's packed totals: their number to the integers, their values
// to the reals; then the lost ranks' steps: their number and (rank, steps) pairs to the integers.
void add_tails(Packed& p, std::span<const EvalEvent> evaluations, const std::map<int, std::int64_t>& lost_steps) {
  p.ints.push_back(static_cast<std::int64_t>(evaluations.size()));
  for (const EvalEvent& e : evaluations)
    p.reals.insert(p.reals.end(), {e.model_time, e.end_time, e.off_clock, e.accuracy});
  p.ints.push_back(static_cast<std::int64_t>(lost_steps.size()));
  for (const auto& [rank, steps] : lost_steps) p.ints.insert(p.ints.end(), {rank, steps});
}

// The RunTotals of a reader from the members' gathered vectors (member order).
RunTotals unpack_all(const collective::Communicator& comm, std::span<const core::Buffer> ints,
                     std::span<const core::Buffer> reals, std::size_t fixed_ints, std::size_t fixed_reals) {
  const int world = comm.size();
  RunTotals out;
  out.world = world;
  out.members = comm.members();
  out.by_rank.resize(static_cast<std::size_t>(world));
  std::int64_t member_claims = 0, counter = 0;
  for (std::size_t m = 0; m < out.members.size(); ++m) {
    const std::span<const std::int64_t> i = ints[m].as<std::int64_t>();
    const std::span<const double> r = reals[m].as<double>();
    FAST_ENFORCE(i.size() >= fixed_ints + 2 && r.size() >= fixed_reals,
                 "gather_totals: member {} sent {} integers and {} reals, expected at least {} and {}", out.members[m],
                 i.size(), r.size(), fixed_ints + 2, fixed_reals);
    WorkerTotals t = unpack(i.first(fixed_ints), r.first(fixed_reals), world);
    const auto lost = static_cast<std::size_t>(i[fixed_ints + 1]);
    FAST_ENFORCE(lost <= static_cast<std::size_t>(world) && i.size() == fixed_ints + 2 + 2 * lost,
                 "gather_totals: member {} announced {} lost ranks and sent {} integers", out.members[m], lost,
                 i.size());
    for (std::size_t k = 0; k < lost; ++k)
      t.lost_steps[static_cast<int>(i[fixed_ints + 2 + 2 * k])] = i[fixed_ints + 3 + 2 * k];
    const auto events = static_cast<std::size_t>(i[fixed_ints]);
    FAST_ENFORCE(r.size() == fixed_reals + events * kEventValues,
                 "gather_totals: member {} announced {} evaluations and sent {} reals", out.members[m], events,
                 r.size());
    for (std::size_t e = 0; e < events; ++e) {
      const double* v = r.data() + fixed_reals + e * kEventValues;
      out.evaluations.push_back(
          {.model_time = v[0], .end_time = v[1], .off_clock = v[2], .accuracy = v[3], .rank = out.members[m]});
    }
    member_claims += t.claims;
    counter = std::max(counter, t.budget_counter);  // the host's; a counter elsewhere stays near 0
    out.by_rank[static_cast<std::size_t>(out.members[m])] = std::move(t);
  }
  if (out.members.size() < static_cast<std::size_t>(world))
    out.lost_claims = std::max<std::int64_t>(0, counter - member_claims);
  std::stable_sort(out.evaluations.begin(), out.evaluations.end(), [](const EvalEvent& a, const EvalEvent& b) {
    return std::tie(a.end_time, a.rank) < std::tie(b.end_time, b.rank);
  });
  return out;
}

}  // namespace

std::optional<RunTotals> gather_totals(collective::Communicator& comm, const WorkerTotals& mine,
                                       std::span<const EvalEvent> evaluations, std::span<const int> readers) {
  const int world = comm.size();
  FAST_ENFORCE_EQ(mine.bytes_to.size(), static_cast<std::size_t>(world),
                  "gather_totals: bytes_to needs one entry per worker");
  FAST_ENFORCE_EQ(mine.bytes_from.size(), static_cast<std::size_t>(world),
                  "gather_totals: bytes_from needs one entry per worker");
  Packed packed = pack(mine);
  const std::size_t fixed_ints = packed.ints.size(), fixed_reals = packed.reals.size();
  add_tails(packed, evaluations, mine.lost_steps);
  std::optional<RunTotals> out;
  for (int reader : readers) {
    const std::vector<core::Buffer> ints = comm.gather(ConstView(std::span<const std::int64_t>(packed.ints)), reader);
    const std::vector<core::Buffer> reals = comm.gather(ConstView(std::span<const double>(packed.reals)), reader);
    if (reader == comm.rank()) out = unpack_all(comm, ints, reals, fixed_ints, fixed_reals);
  }
  return out;
}

TargetTimes time_to_target(std::span<const EvalEvent> ordered, double target) {
  TargetTimes t;
  for (const EvalEvent& e : ordered) {
    const double training = e.model_time - t.off_clock_seconds;
    if (target > 0 && e.accuracy >= target && (t.training_seconds < 0 || training < t.training_seconds)) {
      t.training_seconds = training;
      t.wall_seconds = e.model_time;
    }
    t.off_clock_seconds += e.off_clock;
  }
  return t;
}

}  // namespace fast::training
