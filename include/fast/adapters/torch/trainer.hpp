#pragma once
// train(): the whole `fast train` job as a library call. Loads the dataset once (shared read-only
// by all workers of the process), builds one replica of the model per worker from the same seeded
// initial parameters, and runs the worker loop on the chosen runtime:
//
//   for each step: batch = shard(epoch, step); zero grads; loss = CE(model(x), y); backward;
//                  worker.step()  (exchange + update, per strategy)
//   at each epoch end (or every eval_every steps): the representative model is evaluated on the
//   test set, each worker scoring an equal slice, the counts summed with an all-reduce.
//
// Runs the workers of THIS process (all of them under threads and sim; this process's share under
// zmq, options.process). Workers share no memory: totals, evaluations and the representative model
// are combined with collectives, so the loop is the same whether they share a process or not.
// Each process writes its own workers' metrics (docs/metrics.md, "Files"); the callbacks run in
// the process that hosts worker 0 only, one call at a time.
//
// Returns the summary (the JSON of docs/metrics.md, "Summary"; the same in every process), written
// to options.summary by the process that hosts worker 0. Errors in the options (unknown model, bad
// data folder, ...) are raised before any worker starts. A failure of libtorch's own (memory it
// could not allocate) is a core::Error "libtorch: MESSAGE", without libtorch's backtrace.

#include <filesystem>

#include <nlohmann/json.hpp>

#include "fast/training/train_options.hpp"

namespace fast::torch {

// What one process of the run did, beside the summary that every process shares.
struct ProcessReport {
  // Whether this process hosts worker 0 (and so wrote the summary file): the process whose
  // closing lines report the run.
  bool hosts_worker_zero = true;
  // The metrics file this process wrote (options.metrics, or its per-process name under several
  // processes: docs/metrics.md); empty without --metrics.
  std::filesystem::path metrics_file;
};

// process (optional): filled in once the run ended.
nlohmann::json train(const training::TrainOptions& options, const training::ProgressFn& progress = {},
                     const training::EpochFn& on_epoch = {}, ProcessReport* process = nullptr);

// The checks train() makes before it reads any data: training::validate_settings (each setting's
// range, the output files, the optimizer's and the strategy's options for the world size, e.g.
// dpsgd on a directed topology, checkpoints and resume, the environment variables train() reads:
// what `fast` checks before it starts its training helper), then the device, the model name or
// file, the representative model and the buffer policy for the strategy. Throws
// core::InvalidArgument naming the setting, what it expected and what it got (core::IoError for an
// unreadable TorchScript file). Reads no data and starts nothing; `fast compare` runs it for every
// run of a sweep before the first one starts.
void validate_options(const training::TrainOptions& options);

}  // namespace fast::torch
