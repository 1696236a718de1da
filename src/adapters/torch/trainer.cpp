#include "fast/adapters/torch/trainer.hpp"

#include <atomic>
#include <cmath>
#include <mutex>
#include <vector>

#include <torch/torch.h>

#include "fast/adapters/torch/evaluate.hpp"
#include "fast/adapters/torch/evaluator.hpp"
#include "fast/adapters/torch/fashion_mnist.hpp"
#include "fast/adapters/torch/loader.hpp"
#include "fast/adapters/torch/models.hpp"
#include "fast/adapters/torch/replica.hpp"
#include "fast/adapters/torch/threads.hpp"
#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/metrics/jsonl_writer.hpp"
#include "fast/runtime/launcher.hpp"
#include "fast/runtime/slowdown.hpp"
#include "fast/strategy/worker.hpp"

namespace fast::torch {

namespace {

using nlohmann::json;

// State shared by the workers of one run. Written by worker 0 or through atomics only.
struct Shared {
  std::atomic<std::uint64_t> bytes_sent{0};
  std::atomic<std::int64_t> skipped{0};
  std::mutex comm_mutex;  // guards comm_seconds and slowdown_seconds
  double comm_seconds = 0;
  double slowdown_seconds = 0;
  json final_eval;
  double param_norm = 0;
  double wall_seconds = 0;
  std::int64_t steps = 0;
};

double l2_norm(std::span<const float> v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

}  // namespace

json train(const TrainOptions& options, const ProgressFn& progress, const EpochFn& on_epoch) {
  // Validate everything before a worker starts, so bad input fails fast and clearly.
  FAST_ENFORCE(options.workers >= 1, "workers: expected >= 1, got {}", options.workers);
  FAST_ENFORCE(options.batch >= 1, "batch: expected >= 1, got {}", options.batch);
  FAST_ENFORCE(options.dataset == "fashion-mnist", "dataset: unknown name '{}'; expected one of: fashion-mnist",
               options.dataset);
  {
    auto names = model_names();
    FAST_ENFORCE(std::find(names.begin(), names.end(), options.model) != names.end(),
                 "model: unknown name '{}'; expected one of: {}", options.model, fmt::join(names, ", "));
  }
  runtime::Slowdown(options.slowdown, 0, options.workers);  // validates the slowdown options
  const FinalModel final_model = parse_final_model(options.final_model);
  const std::filesystem::path data_dir =
      options.data_dir.empty() ? std::filesystem::path(core::env_string("FAST_DATA_DIR")) : options.data_dir;
  const FashionMnist data = load_fashion_mnist(data_dir);
  const std::vector<float> initial = initial_parameters(options.model, options.seed);
  const std::int64_t steps_per_epoch = ShardedLoader(data.train, 0, options.workers, options.batch, options.seed).steps_per_epoch();
  const std::int64_t total_steps = options.steps > 0 ? options.steps : options.epochs * steps_per_epoch;
  const double flops_per_step = model_flops_per_sample(options.model) * static_cast<double>(options.batch);
  configure_torch_threads(options.workers);
  strategy::WorkerOptions worker_options = options.worker;
  if (worker_options.schedule.total_steps == 0) worker_options.schedule.total_steps = total_steps;
  worker_options.strategy.seed = options.seed;

  metrics::JsonlWriter writer = options.metrics.empty() ? metrics::JsonlWriter() : metrics::JsonlWriter(options.metrics);
  writer.write({{"event", "start"},
                {"time", 0.0},
                {"strategy", options.worker.strategy.name},
                {"runtime", options.runtime},
                {"workers", options.workers},
                {"model", options.model},
                {"parameters", initial.size()},
                {"batch", options.batch},
                {"steps", total_steps},
                {"steps_per_epoch", steps_per_epoch},
                {"optimizer", options.worker.optimizer.name},
                {"lr", options.worker.optimizer.lr},
                {"seed", options.seed}});

  Shared shared;
  runtime::launch(
      {.runtime = options.runtime, .workers = options.workers, .op_timeout_seconds = options.op_timeout},
      [&](runtime::Context& ctx) {
        ::torch::nn::Sequential model = make_model(options.model);
        Replica replica(*model);
        replica.load(core::ConstView(std::span<const float>(initial)));
        ShardedLoader loader(data.train, ctx.rank(), ctx.size(), options.batch, options.seed);
        runtime::SlowdownOptions slowdown_options = options.slowdown;
        slowdown_options.seed = options.seed;
        runtime::Slowdown slowdown(slowdown_options, ctx.rank(), ctx.size());
        strategy::Worker worker(ctx, worker_options, {.params = replica.param_span(), .grads = replica.grad_span()});
        Evaluator evaluator(worker, replica, model, data.test, final_model);
        const bool lead = ctx.rank() == 0;
        const double start = ctx.now();
        double last_report = start;
        double loss_sum = 0;     // since the last progress report
        std::int64_t loss_count = 0;
        double log_loss_sum = 0;  // since the last metrics record
        std::int64_t log_loss_count = 0;

        auto evaluate_now = [&](std::int64_t epoch, std::int64_t step) {
          const RoundResult round = evaluator.run();
          const EvalResult& r = round.representative;
          if (!lead) return round;
          writer.write({{"event", "eval"}, {"time", ctx.now()}, {"epoch", epoch}, {"step", step},
                        {"accuracy", r.accuracy}, {"loss", r.loss}, {"samples", r.samples},
                        {"consensus_distance", round.consensus_distance},
                        {"replica_accuracy_min", round.replica_accuracy_min},
                        {"replica_accuracy_max", round.replica_accuracy_max},
                        {"representative_rank", round.representative_rank}});
          if (on_epoch) on_epoch({.epoch = epoch, .step = step, .accuracy = r.accuracy, .loss = r.loss});
          return round;
        };

        for (std::int64_t s = 0; s < total_steps; ++s) {
          const std::int64_t epoch = s / steps_per_epoch;
          const double compute_start = slowdown.active() ? ctx.now() : 0.0;
          const Batch batch = loader.batch(epoch, s % steps_per_epoch);
          replica.zero_grad();
          ::torch::Tensor loss = ::torch::nn::functional::cross_entropy(model->forward(batch.x), batch.y);
          loss.backward();
          ctx.compute(flops_per_step);
          if (slowdown.active()) slowdown.after_compute(ctx, ctx.now() - compute_start);
          const double loss_value = loss.item<double>();
          const strategy::StepReport report = worker.step();
          loss_sum += loss_value;
          ++loss_count;
          log_loss_sum += loss_value;
          ++log_loss_count;

          if ((s + 1) % options.log_every == 0 || s + 1 == total_steps) {
            writer.write({{"event", "train"}, {"time", ctx.now()}, {"worker", ctx.rank()}, {"step", s + 1},
                          {"epoch", epoch}, {"samples", (s + 1) * options.batch},
                          {"loss", log_loss_sum / static_cast<double>(log_loss_count)}, {"lr", report.lr},
                          {"comm_seconds", worker.comm_seconds()}, {"bytes_sent", ctx.bytes_sent()},
                          {"skipped_steps", worker.skipped_steps()},
                          {"slowdown_seconds", slowdown.waited_seconds()}});
            log_loss_sum = 0;
            log_loss_count = 0;
          }
          const double now = ctx.now();
          if (lead && progress && (now - last_report >= 0.25 || s + 1 == total_steps)) {
            const double elapsed = now - start;
            const double rate = static_cast<double>((s + 1) * options.batch * ctx.size()) / std::max(elapsed, 1e-9);
            progress({.step = s + 1, .total_steps = total_steps, .epoch = epoch, .elapsed_seconds = elapsed,
                      .samples_per_second = rate, .loss = loss_sum / static_cast<double>(loss_count),
                      .eta_seconds = elapsed / static_cast<double>(s + 1) * static_cast<double>(total_steps - s - 1),
                      .done = s + 1 == total_steps});
            last_report = now;
            loss_sum = 0;
            loss_count = 0;
          }
          const bool epoch_end = (s + 1) % steps_per_epoch == 0;
          const bool periodic = options.eval_every > 0 && (s + 1) % options.eval_every == 0;
          if ((options.eval_every == 0 ? epoch_end : periodic) && s + 1 < total_steps) evaluate_now(epoch, s + 1);
        }
        const double train_end = ctx.now();
        const RoundResult final_round = evaluate_now((total_steps - 1) / steps_per_epoch, total_steps);

        shared.bytes_sent.fetch_add(ctx.bytes_sent(), std::memory_order_relaxed);
        shared.skipped.fetch_add(worker.skipped_steps(), std::memory_order_relaxed);
        {
          std::lock_guard<std::mutex> lock(shared.comm_mutex);
          shared.comm_seconds += worker.comm_seconds();
          shared.slowdown_seconds += slowdown.waited_seconds();
        }
        if (lead) {
          shared.final_eval = {{"accuracy", final_round.representative.accuracy},
                               {"loss", final_round.representative.loss},
                               {"consensus_distance", final_round.consensus_distance},
                               {"replica_accuracy_min", final_round.replica_accuracy_min},
                               {"replica_accuracy_max", final_round.replica_accuracy_max}};
          shared.param_norm = l2_norm(evaluator.representative());
          shared.wall_seconds = train_end - start;
          shared.steps = worker.steps();
        }
      });

  const double samples = static_cast<double>(shared.steps * options.batch * options.workers);
  json summary{{"strategy", options.worker.strategy.name},
               {"runtime", options.runtime},
               {"workers", options.workers},
               {"model", options.model},
               {"dataset", options.dataset},
               {"optimizer", options.worker.optimizer.name},
               {"lr", options.worker.optimizer.lr},
               {"batch", options.batch},
               {"seed", options.seed},
               {"parameters", initial.size()},
               {"steps", shared.steps},
               {"epochs", static_cast<double>(shared.steps) / static_cast<double>(steps_per_epoch)},
               {"final_accuracy", shared.final_eval["accuracy"]},
               {"final_loss", shared.final_eval["loss"]},
               {"final", options.final_model},
               {"consensus_distance", shared.final_eval["consensus_distance"]},
               {"replica_accuracy_min", shared.final_eval["replica_accuracy_min"]},
               {"replica_accuracy_max", shared.final_eval["replica_accuracy_max"]},
               {"wall_seconds", shared.wall_seconds},
               {"samples_per_second", samples / std::max(shared.wall_seconds, 1e-9)},
               {"bytes_sent", shared.bytes_sent.load()},
               {"comm_seconds_mean", shared.comm_seconds / options.workers},
               {"skipped_steps", shared.skipped.load()},
               {"slowdown_seconds", shared.slowdown_seconds},
               {"param_norm", shared.param_norm},
               {"metrics", options.metrics.string()}};
  json end{{"event", "end"}, {"time", shared.wall_seconds}};
  end.update(summary);
  writer.write(end);
  if (!options.summary.empty()) metrics::write_json_file(options.summary, summary);
  return summary;
}

}  // namespace fast::torch
