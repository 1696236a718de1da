#include "fast/training/settings_check.hpp"

#include <cmath>
#include <filesystem>

#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/core/file_status.hpp"
#include "fast/core/log.hpp"
#include "fast/core/malloc_tuning.hpp"
#include "fast/optim/optimizer.hpp"
#include "fast/runtime/environment.hpp"
#include "fast/runtime/slowdown.hpp"
#include "fast/strategy/strategy.hpp"
#include "fast/strategy/worker.hpp"
#include "fast/training/dataset_spec.hpp"
#include "fast/training/environment.hpp"
#include "fast/training/run_identity.hpp"
#include "output_paths.hpp"
#include "run_checks.hpp"

namespace fast::training {

namespace {

// The environment variables train() reads, checked like settings.
void validate_environment() {
  const long long threads = core::env_int(training_environment(), "FAST_TORCH_THREADS");
  FAST_ENFORCE(threads >= 0 && threads <= 1024,
               "environment variable FAST_TORCH_THREADS: expected 0 (by cores) to 1024 threads, got {}", threads);
  const double limit = core::env_number(runtime::runtime_environment(), "FAST_OP_TIMEOUT");
  FAST_ENFORCE(std::isfinite(limit) && limit > 0 && limit <= 1e9,
               "environment variable FAST_OP_TIMEOUT: expected seconds in (0, 1e9], got {}", limit);
  (void)core::malloc_tuning_chosen();
  (void)core::log_level();  // FAST_LOG_LEVEL, read at the first log line otherwise
}

// A path to compare two outputs by: canonical where it resolves, else absolute and normal (a link
// into /proc that names no file, such as /dev/stdout on a pipe, does not resolve).
std::filesystem::path comparable(const std::filesystem::path& p) {
  std::error_code ec;
  std::filesystem::path canonical = std::filesystem::weakly_canonical(p, ec);
  if (!ec) return canonical;
  return std::filesystem::absolute(p, ec).lexically_normal();
}

// Every output can be written (it would fail only when written, after training).
void validate_outputs(const TrainOptions& o) {
  check_writable(o.metrics, "metrics", false);
  check_writable(o.summary, "summary", false);
  check_writable(o.checkpoint_dir, "checkpoint_dir", true);
  FAST_ENFORCE(o.metrics.empty() || o.summary.empty() || comparable(o.metrics) != comparable(o.summary),
               "metrics and summary: both are '{}'; the summary would overwrite the metrics", o.metrics.string());
  FAST_ENFORCE(
      o.save_model.empty() || (o.save_model.extension() == ".npy" &&
                               !std::filesystem::is_directory(core::file_status_of(o.save_model, "save_model"))),
      "save_model: expected the path of a .npy file to write, got '{}'", o.save_model.string());
  check_writable(o.save_model, "save_model", false);
}

}  // namespace

runtime::LaunchOptions launch_options(const TrainOptions& o) {
  return {.runtime = o.runtime,
          .workers = o.workers,
          .op_timeout_seconds = o.op_timeout,
          .cluster = o.cluster,
          .tolerate_lost_workers = o.elastic || strategy::asynchronous_strategy(o.worker.strategy),
          .process = o.process,
          .collectives = o.collectives,
          .windows = o.windows,
          .sim_threads = o.sim_threads};
}

void validate_settings(const TrainOptions& o) {
  validate_environment();
  FAST_ENFORCE(o.workers >= 1, "workers: expected >= 1, got {}", o.workers);
  FAST_ENFORCE(o.epochs >= 1 && o.epochs <= kMaxEpochs, "epochs: expected 1 to {}, got {}", kMaxEpochs, o.epochs);
  FAST_ENFORCE(o.steps >= 0 && o.steps <= kMaxSteps, "steps: expected 0 to {}, got {}", kMaxSteps, o.steps);
  FAST_ENFORCE(o.op_timeout < 0 || (std::isfinite(o.op_timeout) && o.op_timeout <= 1e9),
               "op_timeout: expected seconds in (0, 1e9], got {}", o.op_timeout);
  validate_outputs(o);
  FAST_ENFORCE(o.process.workers_per_process >= 1, "workers_per_process: expected >= 1, got {}",
               o.process.workers_per_process);
  FAST_ENFORCE(o.batch >= 1, "batch: expected >= 1, got {}", o.batch);
  (void)parse_dataset_spec(o.dataset);
  FAST_ENFORCE(std::isfinite(o.model_flops) && o.model_flops >= 0 && o.model_flops <= 1e18,
               "model_flops: expected floating-point operations per sample in [0, 1e18] (0: from the model), got {}",
               o.model_flops);
  strategy::StrategyOptions s = o.worker.strategy;
  s.optimizer = o.worker.optimizer;  // as the Worker fills it in
  s.seed = o.seed;
  strategy::validate_dgc(s);
  (void)optim::make_optimizer(o.worker.optimizer, 1);  // the optimizer's options (lr, momentum, betas, ...)
  if (const int world = workers_before_launch(o); world > 0) {
    runtime::Slowdown(o.slowdown, 0, world);
    strategy::check_strategy_options(s, world);
  }
  validate_checkpoints(o, s);
  validate_elastic(o, s);
  FAST_ENFORCE(o.dgc_warmup_epochs >= 0 && std::isfinite(o.dgc_warmup_epochs),
               "dgc_warmup_epochs: expected a finite number >= 0, got {}", o.dgc_warmup_epochs);
  FAST_ENFORCE(o.dgc_warmup_epochs == 0 || o.worker.strategy.dgc,
               "dgc_warmup_epochs: set to {} without dgc; the warm-up is part of DGC (--dgc)", o.dgc_warmup_epochs);
  if (!o.runtime.empty()) runtime::check_launch_options(launch_options(o));
}

}  // namespace fast::training
