#include "summary.hpp"

#include <algorithm>
#include <csignal>

#include "fast/core/version.hpp"
#include "process_outputs.hpp"
#include "vacant_ranks.hpp"

namespace fast::training {

using nlohmann::json;

namespace {

// Sums and lists over the workers; a lost worker's entries as documented in summary.hpp.
struct Combined {
  std::int64_t steps = 0, skipped = 0;
  std::uint64_t bytes = 0;
  double idle_sum = 0, slowdown_seconds = 0;
  strategy::StalenessStats staleness;
  compress::CompressionStats compression;
  json steps_per_worker = json::array(), idle = json::array(), links = json::array(), lost = json::array(),
       replica_hashes = json::array();
};

void add_link(Combined& c, std::size_t from, std::size_t to, std::uint64_t bytes) {
  if (from == to) return;  // a worker's messages to itself (a co-located server) cross no link
  c.bytes += bytes;
  if (bytes > 0) c.links.push_back({{"from", from}, {"to", to}, {"bytes", bytes}});
}

// Elastic lockstep: the steps of the ranks lost during the run, by rank, from the members that saw
// the most of it: each rank's entry is that of the member that joined earliest (a member present
// from the start saw every loss; one that joined later knows the losses after its join only).
std::map<int, std::int64_t> lost_steps_of(const RunTotals& totals) {
  std::vector<const WorkerTotals*> members;
  for (int m : totals.members)
    if (const auto& t = totals.by_rank[static_cast<std::size_t>(m)]) members.push_back(&*t);
  std::stable_sort(members.begin(), members.end(),
                   [](const WorkerTotals* a, const WorkerTotals* b) { return a->joined_at < b->joined_at; });
  std::map<int, std::int64_t> steps;
  for (const WorkerTotals* t : members) steps.insert(t->lost_steps.begin(), t->lost_steps.end());  // first wins
  return steps;
}

Combined combine(const RunTotals& totals) {
  const std::map<int, std::int64_t> lost_steps = lost_steps_of(totals);
  Combined c;
  const auto world = static_cast<std::size_t>(totals.world);
  const std::size_t lost_count = world - totals.members.size();
  for (std::size_t w = 0; w < world; ++w) {
    const std::optional<WorkerTotals>& t = totals.by_rank[w];
    if (!t) {
      c.lost.push_back(w);
      if (const auto known = lost_steps.find(static_cast<int>(w)); known != lost_steps.end()) {  // elastic lockstep
        c.steps_per_worker.push_back(known->second);
        c.steps += known->second;
      } else {
        c.steps_per_worker.push_back(lost_count == 1 ? totals.lost_claims : -1);
      }
      c.idle.push_back(nullptr);
      c.replica_hashes.push_back(nullptr);
      for (int q : totals.members) {  // the bytes the members received from it
        const auto to = static_cast<std::size_t>(q);
        add_link(c, w, to, totals.by_rank[to]->bytes_from[w]);
      }
      continue;
    }
    // Steps taken on this rank: a joiner's own (from the step it joined at), plus those of the
    // processes that held the rank before and were lost (elastic lockstep: lost_steps). A
    // worker that did not join keeps its count: a loss the members saw while the run ended may
    // name a worker that still reported its totals.
    const auto earlier = lost_steps.find(static_cast<int>(w));
    const std::int64_t before_join = t->joined_at > 0 && earlier != lost_steps.end() ? earlier->second : 0;
    const std::int64_t steps = t->steps - t->joined_at + before_join;
    c.steps += steps;
    c.skipped += t->skipped;
    c.idle_sum += t->idle_seconds;
    c.slowdown_seconds += t->slowdown_seconds;
    c.staleness.merge(t->staleness);
    c.compression.merge(t->compression);
    c.steps_per_worker.push_back(steps);
    c.idle.push_back(t->idle_seconds);
    c.replica_hashes.push_back(metrics::hex64(t->replica_hash));
    for (std::size_t p = 0; p < world; ++p) add_link(c, w, p, t->bytes_to[p]);
  }
  c.steps += totals.lost_claims;
  return c;
}

// The earliest sign of divergence any member saw (by step, then rank); kind none if none did.
metrics::DivergenceSign first_divergence(const RunTotals& totals) {
  metrics::DivergenceSign first;
  for (const std::optional<WorkerTotals>& t : totals.by_rank) {
    if (!t || t->divergence.kind == metrics::DivergenceSign::Kind::none) continue;
    if (first.kind == metrics::DivergenceSign::Kind::none || t->divergence.step < first.step) first = t->divergence;
  }
  return first;
}

// allreduce_algorithm: the setting; allreduce_algorithms: how many all-reduces ran with each
// algorithm (this worker's count: every member runs the same collectives in a synchronous run);
// network_latency_seconds / network_bandwidth: the model the automatic choice assumed.
void add_collectives(json& summary, const TrainOptions& o, const collective::Communicator& comm) {
  summary["allreduce_algorithm"] = std::string(collective::name_of(o.worker.communicator.allreduce_algorithm));
  json counts = json::object();
  for (const auto& [name, count] : comm.allreduce_counts()) counts[name] = count;
  summary["allreduce_algorithms"] = counts;
  summary["network_latency_seconds"] = comm.network().latency_seconds;
  summary["network_bandwidth"] = comm.network().bandwidth_bytes_per_second;
}

// The signal that interrupted the run on any worker (SIGTERM before SIGINT), 0 if none.
// Asynchronous workers stop on their own (a worker of another process may only have seen the
// budget spent), so every member's totals are asked.
int interruption(const RunTotals& totals) {
  int by = 0;
  for (const auto& t : totals.by_rank)
    if (t && t->stopped_by != 0 && by != SIGTERM) by = static_cast<int>(t->stopped_by);
  return by;
}

// interrupted (by what, at which step of the summary's writer), below_min_workers (with min_workers
// and ended_at_step when true), resumed_from_step, checkpoint
// (the last folder written) and checkpoint_step (docs/metrics.md).
void add_resume_fields(json& summary, const SummaryInputs& in, const WorkerTotals& first) {
  const int by = interruption(in.totals);
  summary["interrupted"] = by != 0;
  if (by != 0) {
    summary["interrupted_by"] = by == SIGTERM ? "SIGTERM" : "SIGINT";
    summary["interrupted_at_step"] = first.steps;
  }
  // An elastic run that a loss took below min_workers ended there (exit code 6).
  summary["below_min_workers"] = in.below_min_workers > 0;
  if (in.below_min_workers > 0) {
    summary["min_workers"] = in.options.min_workers;
    summary["ended_at_step"] = first.steps;
  }
  summary["resumed_from_step"] = in.plan.resumed ? json(in.plan.first_step) : json(nullptr);
  summary["checkpoint"] = in.checkpoint_step < 0 ? json(nullptr) : json(in.checkpoint.string());
  summary["checkpoint_step"] = in.checkpoint_step < 0 ? json(nullptr) : json(in.checkpoint_step);
  summary["checkpoint_error"] = in.checkpoint_error.empty() ? json(nullptr) : json(in.checkpoint_error);
}

// The state every member keeps (WorkerTotals::state_bytes) plus the dataset once
// (docs/simulation.md, "Memory floor").
std::uint64_t memory_floor(const RunTotals& totals, std::uint64_t dataset_bytes) {
  std::uint64_t bytes = dataset_bytes;
  for (const std::optional<WorkerTotals>& t : totals.by_rank)
    if (t) bytes += static_cast<std::uint64_t>(t->state_bytes);
  return bytes;
}

}  // namespace

json build_summary(const SummaryInputs& in) {
  const TrainOptions& o = in.options;
  const RunTotals& totals = in.totals;
  const Combined c = combine(totals);
  const WorkerTotals& first = *totals.by_rank[static_cast<std::size_t>(totals.members.front())];
  // The run's training time: the longest a member trained. Synchronous members end together; one
  // that joined later (a restarted process 0 included, which writes this summary) started later.
  double wall = 0;
  for (int m : totals.members) wall = std::max(wall, totals.by_rank[static_cast<std::size_t>(m)]->wall_seconds);
  const TargetTimes target = time_to_target(totals.evaluations, o.target_accuracy);
  // Samples trained by this run (a resumed run's checkpoint steps were trained by an earlier one).
  const double samples = static_cast<double>((c.steps - in.plan.first_step * totals.world) * o.batch);
  const double epochs = static_cast<double>(c.steps) / static_cast<double>(in.plan.steps_per_epoch * totals.world);
  json summary{{"fast_version", core::version()},
               {"strategy", o.worker.strategy.name},
               {"runtime", o.runtime},
               {"workers", totals.world},
               {"model", o.model},
               {"dataset", o.dataset},
               {"optimizer", o.worker.optimizer.name},
               {"lr", o.worker.optimizer.lr},
               {"batch", o.batch},
               {"seed", o.seed},
               {"parameters", in.parameters},
               {"steps", in.plan.total_steps},
               {"steps_per_worker", c.steps_per_worker},
               {"epochs", epochs},
               {"final_accuracy", in.final_eval.accuracy},
               {"final_loss", in.final_eval.loss},
               {"final", o.final_model},
               {"consensus_distance", in.final_eval.consensus_distance},
               {"replica_accuracy_min", in.final_eval.replica_accuracy_min},
               {"replica_accuracy_max", in.final_eval.replica_accuracy_max},
               {"target_accuracy", o.target_accuracy},
               {"time_to_target_seconds", target.training_seconds >= 0 ? json(target.training_seconds) : json(nullptr)},
               {"wall_to_target_seconds", target.wall_seconds >= 0 ? json(target.wall_seconds) : json(nullptr)},
               {"eval_seconds", target.off_clock_seconds},
               {"wall_seconds", wall},
               {"samples_per_second", samples / std::max(wall, 1e-9)},
               {"bytes_sent", c.bytes},
               {"bytes_per_link", c.links},
               {"comm_seconds_mean", c.idle_sum / static_cast<double>(totals.members.size())},
               {"idle_seconds", c.idle},
               {"staleness_mean", c.staleness.mean()},
               {"staleness_max", c.staleness.max},
               {"staleness_count", c.staleness.count},
               {"compress", o.worker.strategy.compress},
               {"compression_ratio", c.compression.ratio()},
               {"compressed_raw_bytes", c.compression.raw_bytes},
               {"compressed_wire_bytes", c.compression.wire_bytes},
               {"skipped_steps", c.skipped},
               {"slowdown_seconds", c.slowdown_seconds},
               {"param_norm", first.param_norm},
               {"param_hash", metrics::hex64(first.param_hash)},
               {"param_hash_per_worker", c.replica_hashes},
               {"metrics", o.metrics.string()}};
  const metrics::DivergenceSign divergence = first_divergence(totals);
  summary["diverged"] = divergence.kind != metrics::DivergenceSign::Kind::none;
  summary["divergence"] = divergence.describe();
  // A run that may grow: the ranks no process took are vacant, not lost; they took no step.
  json lost = c.lost;
  std::vector<int> vacant;
  if (o.process.max_workers > 0) {
    vacant = vacant_ranks(in.communicator.context());
    lost = json::array();
    for (const json& w : c.lost)
      if (std::ranges::count(vacant, w.get<int>()) == 0) lost.push_back(w);
    for (int w : vacant) summary["steps_per_worker"][static_cast<std::size_t>(w)] = 0;
    summary["vacant_workers"] = vacant;
  }
  const std::int64_t ranks = totals.world - static_cast<std::int64_t>(vacant.size());
  summary["stopped_early"] =
      c.steps < in.plan.total_steps * ranks && o.stop_on_divergence && summary["diverged"].get<bool>();
  if (summary["stopped_early"].get<bool>()) summary["stopped_at_step"] = first.steps;
  if (!core::source_commit().empty()) summary["fast_commit"] = core::source_commit();
  if (!lost.empty()) summary["lost_workers"] = lost;
  summary["live_workers"] = totals.members.size();
  // Ranks a new process took back during the run (zmq rejoin) and held at its end (a newcomer that
  // an elastic run never admitted, or that was lost again, is not counted), in the order seen here.
  // A process that is such a process was told the rejoins before it, its own included
  // (before_join); where a runtime tells it none, its own come first.
  json rejoined = json::array();
  const runtime::Context& ctx = in.communicator.context();
  const std::vector<runtime::MembershipEvent> events = ctx.membership_events();
  const bool told = std::ranges::any_of(events, [](const auto& e) { return e.joined && e.before_join; });
  if (ctx.joins_run_under_way() && !told) {
    const int first_rank = first_rank_of_process(ctx);
    for (int w = first_rank; w < first_rank + std::max(1, ctx.local_size()); ++w) rejoined.push_back(w);
  }
  for (const runtime::MembershipEvent& e : events)  // a rank taken back twice is listed once
    if (e.joined && totals.by_rank[static_cast<std::size_t>(e.worker)] &&
        std::ranges::find(rejoined, json(e.worker)) == rejoined.end())
      rejoined.push_back(e.worker);
  summary["rejoined_workers"] = rejoined;
  add_collectives(summary, o, in.communicator);
  add_resume_fields(summary, in, first);
  summary["run"] = in.run;
  // The settings the processes compared (ProcessOptions::shared_settings; `fast compare` compares a
  // summary's with its repetition's before it reuses the summary); none where nobody set them.
  if (!o.process.shared_settings.empty()) {
    const json shared = json::parse(o.process.shared_settings, nullptr, false);
    if (shared.is_object()) summary["settings"] = shared;
  }
  if (in.dataset_bytes) summary["memory_floor_bytes"] = memory_floor(totals, *in.dataset_bytes);
  return summary;
}

metrics::StartRecord start_record(const TrainOptions& o, const LoopPlan& plan, int workers, std::uint64_t parameters) {
  return {.strategy = o.worker.strategy.name,
          .runtime = o.runtime,
          .workers = workers,
          .model = o.model,
          .parameters = parameters,
          .batch = o.batch,
          .steps = plan.total_steps,
          .steps_per_epoch = plan.steps_per_epoch,
          .optimizer = o.worker.optimizer.name,
          .lr = o.worker.optimizer.lr,
          .seed = o.seed,
          .param_norm = plan.initial_norm};
}

}  // namespace fast::training
