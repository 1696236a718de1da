#pragma once
// The end of a training run: each worker's own figures (WorkerTotals, its evaluations) are
// combined by COLLECTIVES among the communicator's group, so that every worker that reads them
// (each process's summary builder) ends with the same RunTotals whether the workers share a
// process or not. After Worker::finish() of an
// asynchronous strategy the group is the survivors of lost workers: a lost worker takes no part,
// and what the survivors know of it is reconstructed (below). No memory is shared between workers.
//
// Torch-free: libtorch is not needed to combine numbers.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "fast/collective/communicator.hpp"
#include "fast/compress/meter.hpp"
#include "fast/metrics/divergence.hpp"
#include "fast/strategy/strategy.hpp"

namespace fast::training {

// One worker's figures at the end of the run (after the final evaluation).
struct WorkerTotals {
  std::int64_t steps = 0;                  // this worker's step count at the end (a joiner's counts from
                                           // the step it joined at, joined_at)
  std::int64_t joined_at = 0;              // the step at which this worker joined a run under way (0: it started it)
  std::int64_t skipped = 0;                // of which the update was skipped
  strategy::StalenessStats staleness;      // of the gradients this worker (or its ps shard) applied
  compress::CompressionStats compression;  // this worker's codec traffic
  std::int64_t claims = 0;                 // asynchronous: claims this worker made on the batch budget,
                                           // its last one (past the budget) included; 0 in lockstep
  std::int64_t budget_counter = 0;         // asynchronous: this worker's budget counter's final value
                                           // (the run's count on the budget's host); 0 otherwise
  double idle_seconds = 0;                 // Worker::comm_seconds
  double slowdown_seconds = 0;             // emulated slowness waited
  double wall_seconds = 0;                 // training time: first step to last (see trainer.cpp)
  double param_norm = 0;                   // L2 norm of the representative model (the summary reads
                                           // the group's first member's; fast train sets no other)
  std::uint64_t param_hash = 0;            // metrics::parameter_hash64 of the representative model (as param_norm)
  std::uint64_t replica_hash = 0;          // metrics::parameter_hash64 of this worker's own parameters at the end
  std::vector<std::uint64_t> bytes_to;     // payload bytes sent to each peer (size: world)
  std::vector<std::uint64_t> bytes_from;   // payload bytes received from each peer (size: world)
  metrics::DivergenceSign divergence;      // the first sign of divergence this worker saw (kind none: none)
  std::int64_t stopped_by = 0;             // the signal that stopped this worker's loop (SIGINT, SIGTERM), 0: none
  std::int64_t state_bytes = 0;            // strategy::Worker::state_bytes (the memory floor)
  // Elastic lockstep: the steps of the ranks this worker saw lost, by rank (WorkerLoop::lost_steps;
  // a rank lost twice: both holders' steps), as far as it saw them: from its own join on.
  std::map<int, std::int64_t> lost_steps;
};

// One evaluation written by a worker, for the time to the target accuracy.
struct EvalEvent {
  double model_time = 0;  // when the evaluated model was taken, seconds since training started
  double end_time = 0;    // when the evaluation ended and its length came off the training clock
  double off_clock = 0;   // seconds it took off the training clock (trainer.cpp: collective: its
                          // length; asynchronous snapshot: its length / workers)
  double accuracy = 0;
  int rank = 0;  // the worker that evaluated
};

struct RunTotals {
  int world = 0;                                     // workers in the world
  std::vector<int> members;                          // workers that took part (all, or the survivors)
  std::vector<std::optional<WorkerTotals>> by_rank;  // nullopt for a lost worker
  // Asynchronous runs with lost workers: batches the lost workers claimed from the budget
  // (applied claims of the counter minus the members' claims), the last one perhaps untrained.
  std::int64_t lost_claims = 0;
  std::vector<EvalEvent> evaluations;  // every member's, ordered by (end_time, rank)
};

// Collective among comm's group (every member calls it at the same point, with bytes_to and
// bytes_from of length comm.size(), and the same `readers`: members' ranks): gathers the members'
// totals and evaluations at each reader. Returns the same RunTotals on every reader, nullopt on
// the other members. Only readers hold everyone's totals (their per-link bytes grow with the
// world: at 1,024 workers an all-gather gave each worker 16 MB of them).
std::optional<RunTotals> gather_totals(collective::Communicator& comm, const WorkerTotals& mine,
                                       std::span<const EvalEvent> evaluations, std::span<const int> readers);

// The first evaluation that reached `target` accuracy on the training clock: training time =
// model_time - (off_clock of every evaluation that ended before this one ended, in the order of
// RunTotals::evaluations). Both times are negative (none) when no evaluation reached it or target <= 0.
struct TargetTimes {
  double training_seconds = -1;  // on the training clock (evaluations taken off)
  double wall_seconds = -1;      // the same moment on the plain clock
  double off_clock_seconds = 0;  // every evaluation's off_clock, summed
};
TargetTimes time_to_target(std::span<const EvalEvent> ordered, double target);

}  // namespace fast::training
