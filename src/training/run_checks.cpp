#include "run_checks.hpp"

#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "checkpoint_store.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/registry.hpp"
#include "fast/strategy/aggregate.hpp"
#include "fast/strategy/registry.hpp"
#include "fast/strategy/worker.hpp"
#include "fast/training/run_identity.hpp"
#include "output_paths.hpp"

namespace fast::training {

namespace {

// The runtimes of this build that declare `trait` (loses_workers, takes_new_processes), for messages.
std::string runtimes_with(bool runtime::RuntimeBackend::*trait) {
  std::vector<std::string_view> names;
  for (const runtime::RuntimeBackend& b : runtime::runtime_backends())
    if (b.*trait) names.push_back(b.name);
  return names.empty() ? std::string("none in this build") : fmt::format("{}", fmt::join(names, ", "));
}

// max_workers (a run that may grow): an elastic synchronous run on a runtime that takes new
// processes. An asynchronous strategy sets its windows up with every rank at the start, which a
// vacant rank cannot take part in.
void validate_growth(const TrainOptions& o, const strategy::StrategyOptions& s) {
  if (o.process.max_workers == 0) return;
  FAST_ENFORCE(o.process.max_workers > 0, "max_workers: expected 0 (the starting workers) or more, got {}",
               o.process.max_workers);
  FAST_ENFORCE(runtime::find_runtime(o.runtime).takes_new_processes,
               "max_workers: set to {} with runtime '{}', in which no process can join a run under way; expected a "
               "runtime that takes new processes ({}) or max_workers = 0",
               o.process.max_workers, o.runtime, runtimes_with(&runtime::RuntimeBackend::takes_new_processes));
  FAST_ENFORCE(o.elastic && !strategy::asynchronous_strategy(s),
               "max_workers: set to {} {}; expected elastic = true (--elastic) with a synchronous strategy: the "
               "group admits a worker that joins at a step boundary (an asynchronous strategy sets up with every "
               "rank at the start, which a vacant rank cannot take part in)",
               o.process.max_workers,
               o.elastic ? fmt::format("with the asynchronous strategy '{}'", s.name) : std::string("without elastic"));
  const int per_process = o.process.workers_per_process;
  FAST_ENFORCE(o.process.max_workers % per_process == 0,
               "max_workers: expected a multiple of workers_per_process ({}: a process that joins takes a whole "
               "process's ranks), got {}",
               per_process, o.process.max_workers);
  FAST_ENFORCE(o.process.max_workers / per_process <= runtime::kMaxGrowthProcesses,
               "max_workers: expected at most {} processes' workers ({} x workers_per_process {}: the rendezvous's "
               "table of a run that may grow fits one message), got {}",
               runtime::kMaxGrowthProcesses, runtime::kMaxGrowthProcesses * per_process, per_process,
               o.process.max_workers);
  const int starting = o.process.world_size > 0 ? o.process.world_size * per_process : 0;  // 0: not known yet
  FAST_ENFORCE(o.process.max_workers >= starting,
               "max_workers: expected at least the {} workers the run starts with (world_size {} x workers_per_process "
               "{}), got {}",
               starting, o.process.world_size, per_process, o.process.max_workers);
  if (starting > 0) {  // the group the run starts with: a topology may not take its size
    try {
      strategy::check_strategy_options(s, starting);
    } catch (const core::InvalidArgument& e) {
      FAST_THROW(core::InvalidArgument, "max_workers: the run starts with {} of its {} workers, and {}", starting,
                 o.process.max_workers, e.what());
    }
  }
  FAST_ENFORCE(starting == 0 || o.min_workers <= starting,
               "min_workers: expected at most the {} workers the run starts with, got {} (the run could never "
               "start)",
               starting, o.min_workers);
  FAST_ENFORCE(o.resume.empty() && !o.resume_if_present,
               "max_workers: set to {} with {}; expected no resume: a checkpoint holds the files of the group's "
               "members, and a run that starts with vacant ranks would need every rank's",
               o.process.max_workers, o.resume.empty() ? "resume_if_present" : "resume");
}

}  // namespace

void validate_checkpoints(const TrainOptions& o, const strategy::StrategyOptions& s) {
  FAST_ENFORCE(o.checkpoint_every >= 0, "checkpoint_every: expected steps >= 0, got {}", o.checkpoint_every);
  FAST_ENFORCE(o.checkpoint_keep >= 1, "checkpoint_keep: expected >= 1, got {}", o.checkpoint_keep);
  FAST_ENFORCE(o.checkpoint_every == 0 || !o.checkpoint_dir.empty(),
               "checkpoint_every: set to {} without checkpoint_dir; expected a folder to write the checkpoints to",
               o.checkpoint_every);
  FAST_ENFORCE(!o.resume_if_present || !o.checkpoint_dir.empty(),
               "resume_if_present: set without checkpoint_dir; expected the folder to resume from when it holds a "
               "checkpoint (--checkpoint-dir DIR)");
  FAST_ENFORCE(!o.resume_if_present || o.resume.empty(),
               "resume_if_present and resume: both set (resume = '{}'); expected one: resume_if_present resumes "
               "from checkpoint_dir when it holds a checkpoint, resume always from its folder",
               o.resume.string());
  if (o.checkpoint_dir.empty() && o.resume.empty()) return;
  if (o.checkpoint_every > 0) {
    const std::string refusal = strategy::periodic_checkpoint_refusal(s);
    FAST_ENFORCE(refusal.empty(),
                 "checkpoint_every: set to {} with the asynchronous strategy '{}': {}; expected 0 (its checkpoint is "
                 "then written at the end and when interrupted)",
                 o.checkpoint_every, s.name, refusal);
  }
  FAST_ENFORCE(o.checkpoint_dir.empty() || path_kind(o.checkpoint_dir, "checkpoint_dir") != PathKind::other,
               "checkpoint_dir: '{}' is a file; expected a folder (created if missing)", o.checkpoint_dir.string());
  if (o.resume.empty()) return;
  CheckpointStore::expect_checkpoints(o.resume);
}

void validate_elastic_bounds(const TrainOptions& o, int world) {
  FAST_ENFORCE(o.elastic || o.worker.elastic_lr == strategy::ElasticLr::keep,
               "elastic_lr: set to 'linear' without elastic; expected elastic = true (--elastic): the rate follows "
               "the group's size only in an elastic run");
  FAST_ENFORCE(o.elastic || o.min_workers == 1,
               "min_workers: set to {} without elastic; expected elastic = true (--elastic): only an elastic run "
               "goes on with fewer workers",
               o.min_workers);
  FAST_ENFORCE(world <= 0 || o.min_workers <= world,
               "min_workers: expected at most the run's {} workers, got {} (the run could never start)", world,
               o.min_workers);
}

void validate_elastic(const TrainOptions& o, const strategy::StrategyOptions& s) {
  validate_elastic_bounds(o, workers_before_launch(o));
  const auto fault = strategy::FaultInjection::parse(s.fault_inject, std::numeric_limits<int>::max());
  FAST_ENFORCE(o.elastic || !fault.needs_elastic(),
               "fault_inject '{}': {} set without elastic; expected elastic = true (--elastic): only an elastic "
               "synchronous run admits a worker taken back",
               s.fault_inject, fault.kind_name());
  FAST_ENFORCE(o.elastic || !fault.exits_in_the_end() || strategy::asynchronous_strategy(s),
               "fault_inject '{}': {} set without elastic for the synchronous strategy '{}'; expected elastic = true "
               "(--elastic) or an asynchronous strategy, whose end survives the loss",
               s.fault_inject, fault.kind_name(), s.name);
  FAST_ENFORCE(!fault.exits_in_the_end() || runtime::find_runtime(o.runtime).loses_workers,
               "fault_inject '{}': {} set with runtime '{}', whose workers cannot be lost while the others go on; "
               "expected a runtime that loses workers ({})",
               s.fault_inject, fault.kind_name(), o.runtime, runtimes_with(&runtime::RuntimeBackend::loses_workers));
  FAST_ENFORCE(!o.checkpoint_dir.empty() || !fault.exits_while_checkpointing(),
               "fault_inject '{}': exit-while-checkpointing set without checkpoint_dir; expected a folder to write "
               "checkpoints to (--checkpoint-dir): a run that writes none never injects it",
               s.fault_inject);
  const std::string shared =
      fault.process_refusal(s.fault_inject, o.runtime, runtime::find_runtime(o.runtime).multi_process);
  FAST_ENFORCE(shared.empty(), "{}: {}", shared, runtimes_with(&runtime::RuntimeBackend::multi_process));
  validate_growth(o, s);
  if (!o.elastic) return;
  const std::string refusal = strategy::elastic_refusal(s);
  FAST_ENFORCE(refusal.empty(),
               "elastic: set, but {}; expected a synchronous strategy and options whose survivors regroup without "
               "a lost worker (docs/faults.md, \"Elastic synchronous training\", lists them), or elastic = false",
               refusal);
  FAST_ENFORCE(runtime::find_runtime(o.runtime).loses_workers,
               "elastic: set with runtime '{}', whose workers cannot be lost while the others go on; expected a "
               "runtime that loses workers: {}",
               o.runtime, runtimes_with(&runtime::RuntimeBackend::loses_workers));
}

}  // namespace fast::training
