#pragma once
// The summary of a training run (docs/metrics.md, "Summary"), built from the totals every worker
// holds after gather_totals(), so any member can build it and all build the same one. Torch-free.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "fast/metrics/records.hpp"
#include "fast/training/train_options.hpp"
#include "run_totals.hpp"
#include "worker_loop.hpp"

namespace fast::training {

struct SummaryInputs {
  const TrainOptions& options;
  const LoopPlan& plan;
  std::uint64_t parameters = 0;           // model parameters
  const metrics::EvalRecord& final_eval;  // the final collective evaluation (the same on every member)
  const RunTotals& totals;
  // The summary writer's Communicator: its all-reduce counts by algorithm and its network model.
  const collective::Communicator& communicator;
  // The last checkpoint this run wrote (WorkerLoop::last_checkpoint), and its step; -1: none.
  std::filesystem::path checkpoint = {};
  std::int64_t checkpoint_step = -1;
  // The run's identity with its fingerprint (run_identity.hpp): the summary's "run".
  nlohmann::json run = nullptr;
  // Why the final checkpoint was not written; "" when it was (or none was asked for).
  std::string checkpoint_error = {};
  // The members left when a loss took an elastic run below min_workers (WorkerLoop::below_min_workers); 0: none did.
  int below_min_workers = 0;
  // Bytes of the training and test sets this process holds; nullopt where the workers do not all
  // run in this process (no memory_floor_bytes then).
  std::optional<std::uint64_t> dataset_bytes = std::nullopt;
};

// Figures of lost workers (asynchronous runs; docs/metrics.md): their steps are the batches they
// claimed from the budget (known for one lost worker; -1 each when several are lost, whose total
// still counts in `epochs` and `samples_per_second`); their idle seconds are null; their links
// carry the bytes the members received from them; their staleness, compression, skipped steps and
// slowdown are not known and not counted. The wall time, parameter norm and hash are those of the
// lowest-ranked member (worker 0 unless it was lost).
nlohmann::json build_summary(const SummaryInputs& in);

// The `start` record of a run of `workers` workers on a model of `parameters` parameters.
metrics::StartRecord start_record(const TrainOptions& o, const LoopPlan& plan, int workers, std::uint64_t parameters);

}  // namespace fast::training
