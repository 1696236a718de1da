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
// Returns the summary (the JSON of docs/metrics.md, "Summary"), also written to options.summary.
// Errors in the options (unknown model, bad data folder, ...) are raised before any worker starts.

#include <nlohmann/json.hpp>

#include "fast/adapters/torch/train_options.hpp"

namespace fast::torch {

nlohmann::json train(const TrainOptions& options, const ProgressFn& progress = {}, const EpochFn& on_epoch = {});

}  // namespace fast::torch
