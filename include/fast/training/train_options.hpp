#pragma once
// TrainOptions: one training run of a libtorch model on a dataset across N workers. Filled by the
// `fast train` command (config file and flags, see docs/config.md) or by library users directly.
// This header does not include libtorch.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "fast/runtime/launcher.hpp"
#include "fast/runtime/slowdown.hpp"
#include "fast/strategy/worker.hpp"

namespace fast::training {

// `fast train`'s defaults for the optimizer and its schedule (docs/config.md, "Defaults"): SGD with
// momentum 0.9 at lr 0.05, decayed to 0 over the run by a cosine. A bare `fast train` (mlp, 2
// workers, 1 epoch) reaches about 0.86 with them, where the library's plain defaults (sgd at 0.01,
// constant) reach 0.73. The library's OptimizerOptions and ScheduleOptions keep their own defaults.
inline strategy::WorkerOptions default_worker_options() {
  strategy::WorkerOptions w;
  w.optimizer.name = "momentum";
  w.optimizer.lr = 0.05;
  w.schedule.name = "cosine";
  return w;
}

// The learning rate `fast train` uses for `optimizer` when none is given: 0.001 for adam and adamw,
// 0.05 for the SGD family.
inline double default_lr(const std::string& optimizer) {
  return optimizer == "adam" || optimizer == "adamw" ? 0.001 : 0.05;
}

// The largest epochs and steps (a larger count overflowed the step counter); the settings
// declare them (settings/config_keys.cpp) and validate_settings() checks them.
inline constexpr std::int64_t kMaxEpochs = 1'000'000;
inline constexpr std::int64_t kMaxSteps = 1'000'000'000'000;

struct TrainOptions {
  std::string runtime = "threads";  // runtime::runtime_names()
  std::filesystem::path cluster;    // sim: cluster file (docs/clusters.md); empty: a default cluster
  int workers = 2;                  // number of workers (threads, sim; zmq: ignored, the world
                                    // is process.world_size x process.workers_per_process;
                                    // mpi: ignored, one worker per rank)
  std::string model = "mlp";        // model_names(), or a TorchScript file (models.hpp)
  double model_flops = 0;           // sim: flops to train on one sample; 0: model_flops_per_sample()
  std::string dataset =
      "fashion-mnist";             // a dataset spec (datasets.hpp): fashion-mnist, npz:..., npy:..., synthetic:...
  std::filesystem::path data_dir;  // fashion-mnist's folder; empty: FAST_DATA_DIR
  std::int64_t epochs = 1;         // passes over the training set (ignored when steps > 0)
  std::int64_t steps = 0;          // steps per worker; 0: epochs * steps per epoch
  std::int64_t batch = 64;         // mini-batch per worker
  std::uint64_t seed = 1;          // model initialisation and data order
  strategy::WorkerOptions worker = default_worker_options();  // strategy, optimizer (with lr), schedule
  bool lr_given = false;                 // lr was set; otherwise choosing an optimizer sets default_lr()
  std::filesystem::path metrics;         // JSONL metrics file; empty: none
  std::filesystem::path summary;         // JSON summary file; empty: none
  std::filesystem::path save_model;      // .npy file of the representative model's flat parameters; empty: none
  std::filesystem::path checkpoint_dir;  // checkpoints of this run (docs/faults.md); empty: none
  std::int64_t checkpoint_every = 0;     // a checkpoint every this many steps; 0: at the end and on SIGINT/SIGTERM only
  std::int64_t checkpoint_keep = 2;      // complete checkpoints kept in checkpoint_dir (older ones are removed)
  std::filesystem::path resume;       // continue from the newest complete checkpoint in this folder; empty: start anew
  bool resume_if_present = false;     // resume from checkpoint_dir when it holds a complete checkpoint, else start anew
  bool elastic = false;  // synchronous strategies: the survivors of a lost worker regroup and go on (docs/faults.md)
  // elastic: a loss that leaves fewer workers ends the run (core::exit_code::below_min_workers); 1: never.
  int min_workers = 1;
  std::int64_t log_every = 50;        // a `train` metrics record every this many steps (per worker)
  std::int64_t eval_every = 0;        // evaluate every this many steps; 0: at each epoch's end
  double op_timeout = -1;             // blocking-operation limit in seconds; < 0: FAST_OP_TIMEOUT
  int sim_threads = 0;                // sim: threads computing gradients (runtime::LaunchOptions::sim_threads)
  runtime::SlowdownOptions slowdown;  // emulated slow workers and stragglers (seed: `seed`)
  std::string final_model = "average";  // representative model: average | rank0 | best
  bool replica_accuracy = true;         // the final evaluation also scores every replica (replica_accuracy_min/max)
  std::string buffers =
      "auto";  // model buffers after every step: auto | broadcast | average | local (buffer_policy.hpp)
  double target_accuracy = 0.85;    // the summary reports the time to this test accuracy; 0: off
  runtime::ProcessOptions process;  // zmq: rendezvous, keys, workers per process (docs/config.md)
  std::string collectives;          // fast | native | "" (runtime::LaunchOptions::collectives)
  std::string windows;              // rma | service | "" (runtime::LaunchOptions::windows)
  bool stop_on_divergence = false;  // end the run early once it diverged (docs/metrics.md "Divergence")
  double dgc_warmup_epochs = 0;     // dgc: the sparsity warm-up in epochs (worker.strategy.dgc_warmup_steps)
  std::string device = "cpu";       // where each worker computes: cpu, cuda, cuda:K (device.hpp, docs/gpu.md)
  bool device_staging = false;      // tests: the device path's host copies on the CPU (Replica::Placement::staged)
};

// What the training loop reports to a live display (from worker 0, about every 0.25 s). The
// callbacks of train() run in the process that hosts worker 0 only, one call at a time.
struct Progress {
  std::int64_t step = 0;  // steps done by worker 0
  std::int64_t total_steps = 0;
  std::int64_t epoch = 0;  // 0-based
  double elapsed_seconds = 0;
  double samples_per_second = 0;  // all workers, since the start
  double loss = 0;                // worker 0's mean training loss since the last report
  double eta_seconds = 0;
  bool done = false;  // the last report of the run
};
using ProgressFn = std::function<void(const Progress&)>;

// Evaluation results reported to the display: the collective evaluations, and under an
// asynchronous strategy the snapshot evaluations made by the workers of worker 0's process.
struct EpochReport {
  std::int64_t epoch = 0;  // the 0-based epoch the evaluation falls in (1.0 epochs done: epoch 0)
  double epochs_done = 0;  // epochs of training done, fractional: the eval record's `epoch`
  std::int64_t step = 0;
  double accuracy = 0;
  double loss = 0;
};
using EpochFn = std::function<void(const EpochReport&)>;

}  // namespace fast::training
