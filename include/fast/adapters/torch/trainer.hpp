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
// data folder, ...) are raised before any worker starts.

#include <nlohmann/json.hpp>

#include "fast/adapters/torch/train_options.hpp"

namespace fast::torch {

nlohmann::json train(const TrainOptions& options, const ProgressFn& progress = {}, const EpochFn& on_epoch = {});

}  // namespace fast::torch
