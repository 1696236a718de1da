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

// What each worker reports at the end; indexed by rank, each entry written by its worker only.
struct WorkerTotals {
  std::int64_t steps = 0;
  std::int64_t skipped = 0;
  double idle_seconds = 0;  // in the strategy's exchanges and final wait (Worker::comm_seconds)
  double slowdown_seconds = 0;
  std::vector<std::uint64_t> bytes_to;  // bytes sent to each peer
  strategy::StalenessStats staleness;
  compress::CompressionStats compression;  // the codec's traffic of this worker
};

// State shared by the workers of one run. Per-worker slots, or written by worker 0 only.
struct Shared {
  explicit Shared(int workers) : totals(static_cast<std::size_t>(workers)) {}
  std::vector<WorkerTotals> totals;
  json final_eval;
  double param_norm = 0;
  double wall_seconds = 0;
  std::mutex eval_mutex;  // guards the fields below and the on_epoch callback
  double time_to_target = -1;       // on the training clock
  double wall_to_target = -1;
  double eval_seconds = 0;          // evaluation time taken off the training clock so far
  std::vector<int> lost;            // workers lost with their hosts (asynchronous runs), per worker 0
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
  // Intra-op threads: the cores divided among the workers, under sim as under threads. Under sim
  // one actor runs at a time, but each actor is an OS thread with its own OpenMP team, whose idle
  // threads spin after every parallel region: with 2 threads per actor, 256 simulated workers
  // spent 84% of the CPU spinning in libgomp (docs/simulation.md, "Scale").
  configure_torch_threads(options.workers);
  strategy::WorkerOptions worker_options = options.worker;
  if (worker_options.schedule.total_steps == 0) worker_options.schedule.total_steps = total_steps;
  worker_options.strategy.seed = options.seed;
  // Samples of one lockstep step of all workers; an asynchronous run has the same budget.
  const std::int64_t round_samples = options.batch * options.workers;
  const std::int64_t eval_interval_steps = options.eval_every > 0 ? options.eval_every : steps_per_epoch;

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

  Shared shared(options.workers);
  // Asynchronous strategies go on without a worker lost with its host (docs/simulation.md,
  // "Failures"); synchronous ones end with its PeerLost.
  const double run_seconds = runtime::launch(
      {.runtime = options.runtime, .workers = options.workers, .op_timeout_seconds = options.op_timeout,
       .cluster = options.cluster, .tolerate_lost_workers = strategy::asynchronous_strategy(worker_options.strategy)},
      [&](runtime::Context& ctx) {
        ::torch::nn::Sequential model = make_model(options.model);
        Replica replica(*model);
        replica.load(core::ConstView(std::span<const float>(initial)));
        ShardedLoader loader(data.train, ctx.rank(), ctx.size(), options.batch, options.seed);
        runtime::SlowdownOptions slowdown_options = options.slowdown;
        slowdown_options.seed = options.seed;
        runtime::Slowdown slowdown(slowdown_options, ctx.rank(), ctx.size());
        strategy::Worker worker(ctx, worker_options, {.params = replica.param_span(), .grads = replica.grad_span(), .layout = replica.layout()});
        Evaluator evaluator(worker, replica, model, data.test, final_model);
        const bool lead = ctx.rank() == 0;
        const bool asynchronous = worker.strategy().asynchronous();
        const double start = ctx.now();
        double last_report = start;
        double loss_sum = 0;     // since the last progress report
        std::int64_t loss_count = 0;
        double log_loss_sum = 0;  // since the last metrics record
        std::int64_t log_loss_count = 0;
        double last_lr = 0;

        // Writes an eval record; `time` is when the evaluated model was taken.
        auto record_eval = [&](const RoundResult& round, double time, double epoch, std::int64_t step) {
          const EvalResult& r = round.representative;
          json record{{"event", "eval"}, {"time", time - start}, {"epoch", epoch}, {"step", step},
                      {"worker", ctx.rank()}, {"accuracy", r.accuracy}, {"loss", r.loss}, {"samples", r.samples},
                      {"consensus_distance", round.consensus_distance}};
          if (round.replica_accuracy_min >= 0) {
            record["replica_accuracy_min"] = round.replica_accuracy_min;
            record["replica_accuracy_max"] = round.replica_accuracy_max;
            record["representative_rank"] = round.representative_rank;
          }
          writer.write(record);
          std::lock_guard<std::mutex> lock(shared.eval_mutex);  // asynchronous runs evaluate on any worker
          const double training_time = time - start - shared.eval_seconds;
          if (options.target_accuracy > 0 && r.accuracy >= options.target_accuracy &&
              (shared.time_to_target < 0 || training_time < shared.time_to_target)) {
            shared.time_to_target = training_time;
            shared.wall_to_target = time - start;
          }
          // The callback's epoch is the 0-based epoch the evaluation falls in (1.0 epochs done: epoch 0).
          if (on_epoch) on_epoch({.epoch = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::ceil(epoch)) - 1), .step = step, .accuracy = r.accuracy, .loss = r.loss});
        };
        // Evaluation time comes off the training clock that time_to_target uses: a collective
        // evaluation pauses every worker for its whole length; a snapshot evaluation pauses one
        // worker of N, so 1/N of its length.
        auto take_off_clock = [&](double seconds) {
          std::lock_guard<std::mutex> lock(shared.eval_mutex);
          shared.eval_seconds += seconds;
        };
        auto evaluate_collective = [&](std::int64_t step, bool final_round) {
          const double time = ctx.now();
          const RoundResult round = evaluator.run(final_round);
          if (lead) {
            record_eval(round, time, static_cast<double>(step) / static_cast<double>(steps_per_epoch), step);
            take_off_clock(ctx.now() - time);
          }
          return round;
        };

        // A `train` record: this worker's state after `steps` steps.
        auto write_train_record = [&](std::int64_t steps, std::int64_t epoch, double lr) {
          const strategy::StalenessStats st = worker.strategy().staleness();
          writer.write({{"event", "train"}, {"time", ctx.now() - start}, {"worker", ctx.rank()}, {"step", steps},
                        {"epoch", epoch}, {"samples", steps * options.batch},
                        {"loss", log_loss_count > 0 ? log_loss_sum / static_cast<double>(log_loss_count) : 0.0},
                        {"lr", lr}, {"comm_seconds", worker.comm_seconds()}, {"bytes_sent", ctx.bytes_sent()},
                        {"skipped_steps", worker.skipped_steps()}, {"staleness_mean", st.mean()},
                        {"staleness_max", st.max}, {"slowdown_seconds", slowdown.waited_seconds()}});
          log_loss_sum = 0;
          log_loss_count = 0;
        };
        // This worker's totals for the summary. Kept current after every step of an asynchronous
        // run, so a worker lost with its host still reports what it did.
        WorkerTotals& mine = shared.totals[static_cast<std::size_t>(ctx.rank())];
        auto save_totals = [&] {
          mine.steps = worker.steps();
          mine.skipped = worker.skipped_steps();
          mine.idle_seconds = worker.comm_seconds();
          mine.slowdown_seconds = slowdown.waited_seconds();
          mine.staleness = worker.strategy().staleness();
          mine.compression = worker.strategy().compression();
          mine.bytes_to.resize(static_cast<std::size_t>(ctx.size()));
          for (int p = 0; p < ctx.size(); ++p) mine.bytes_to[static_cast<std::size_t>(p)] = ctx.link_stats(p).bytes_sent;
        };
        // One training step on this worker's batch (epoch, index); returns the report.
        auto train_step = [&](std::int64_t epoch, std::int64_t index) {
          const double compute_start = slowdown.active() ? ctx.now() : 0.0;
          const Batch batch = loader.batch(epoch, index);
          replica.zero_grad();
          ::torch::Tensor loss = ::torch::nn::functional::cross_entropy(model->forward(batch.x), batch.y);
          loss.backward();
          ctx.compute(flops_per_step);
          if (slowdown.active()) slowdown.after_compute(ctx, ctx.now() - compute_start);
          const double loss_value = loss.item<double>();
          const strategy::StepReport report = worker.step();
          last_lr = report.lr;
          loss_sum += loss_value;
          ++loss_count;
          log_loss_sum += loss_value;
          ++log_loss_count;
          const std::int64_t s = report.step;
          if ((s + 1) % options.log_every == 0) write_train_record(s + 1, epoch, report.lr);
          return report;
        };
        // Progress of the whole run as `done` lockstep steps out of total_steps (worker 0 reports).
        auto report_progress = [&](std::int64_t done, std::int64_t epoch) {
          const double now = ctx.now();
          const bool last = done >= total_steps;
          if (!lead || !progress || (now - last_report < 0.25 && !last)) return;
          const double elapsed = now - start;
          const double rate = static_cast<double>(done * round_samples) / std::max(elapsed, 1e-9);
          progress({.step = std::min(done, total_steps), .total_steps = total_steps, .epoch = epoch,
                    .elapsed_seconds = elapsed, .samples_per_second = rate,
                    .loss = loss_count > 0 ? loss_sum / static_cast<double>(loss_count) : 0.0,
                    .eta_seconds = elapsed / static_cast<double>(std::max<std::int64_t>(done, 1)) *
                                   static_cast<double>(std::max<std::int64_t>(total_steps - done, 0)),
                    .done = last});
          last_report = now;
          loss_sum = 0;
          loss_count = 0;
        };

        if (!asynchronous) {
          // Lockstep: every worker takes total_steps steps; evaluations are collective.
          for (std::int64_t s = 0; s < total_steps; ++s) {
            const std::int64_t epoch = s / steps_per_epoch;
            train_step(epoch, s % steps_per_epoch);
            report_progress(s + 1, epoch);
            if ((s + 1) % eval_interval_steps == 0 && s + 1 < total_steps) evaluate_collective(s + 1, false);
          }
        } else {
          // Asynchronous: the workers share a budget of total_steps * workers batches, claimed one
          // at a time from a counter on worker 0 (fetch-and-add through a window), so fast workers
          // take more steps than slow ones. Each worker walks its own shard, epoch after epoch.
          // The worker whose claim crosses an evaluation point evaluates the current snapshot.
          std::vector<double> counter(1, 0.0);
          collective::Window claims(worker.communicator(), "trainer.claims", core::MutableView(std::span<double>(counter)));
          const double budget = static_cast<double>(total_steps * options.workers);
          const double per_eval = static_cast<double>(eval_interval_steps * options.workers);
          const std::vector<double> one{1.0};
          std::vector<double> before(1);
          for (std::int64_t s = 0;; ++s) {
            try {
              claims.fetch_accumulate(0, core::ConstView(std::span<const double>(one)),
                                      core::MutableView(std::span<double>(before))).wait();
            } catch (const core::PeerLost& e) {
              if (ctx.alive(0)) throw;
              FAST_THROW(core::PeerLost, "asynchronous training: worker 0, which holds the shared batch budget "
                         "(window 'trainer.claims'), was lost; the run cannot go on without it: {}", e.what());
            }
            const double claimed = before[0];  // batches claimed before this one
            if (claimed >= budget) break;
            const std::int64_t epoch = s / steps_per_epoch;
            train_step(epoch, s % steps_per_epoch);
            save_totals();
            const auto lockstep_done = static_cast<std::int64_t>((claimed + 1) / options.workers);
            report_progress(lockstep_done, static_cast<std::int64_t>(claimed / options.workers) / steps_per_epoch);
            if (std::floor((claimed + 1) / per_eval) > std::floor(claimed / per_eval) && claimed + 1 < budget) {
              const double time = ctx.now();
              const RoundResult round = evaluator.snapshot_round();
              const double rounds = (claimed + 1) / options.workers;
              record_eval(round, time, rounds / static_cast<double>(steps_per_epoch), static_cast<std::int64_t>(rounds));
              take_off_clock((ctx.now() - time) / ctx.size());
            }
          }
          // finish() first: it releases peers that wait on this worker's progress (ps ssp) before
          // any collective wait; the claims window closes after it, when nobody claims any more.
          if (log_loss_count > 0) write_train_record(worker.steps(), worker.steps() / steps_per_epoch, last_lr);
          worker.finish();
          claims.close();
        }
        const double train_end = ctx.now();
        if (!asynchronous && log_loss_count > 0) write_train_record(worker.steps(), worker.steps() / steps_per_epoch, last_lr);
        worker.finish();
        const RoundResult final_round = evaluate_collective(total_steps, true);

        save_totals();
        if (lead) {
          for (int p = 0; p < ctx.size(); ++p)
            if (!ctx.alive(p)) shared.lost.push_back(p);
          shared.final_eval = {{"accuracy", final_round.representative.accuracy},
                               {"loss", final_round.representative.loss},
                               {"consensus_distance", final_round.consensus_distance},
                               {"replica_accuracy_min", final_round.replica_accuracy_min},
                               {"replica_accuracy_max", final_round.replica_accuracy_max}};
          shared.param_norm = l2_norm(evaluator.representative());
          shared.wall_seconds = train_end - start;
        }
      });

  std::int64_t steps_all = 0, skipped = 0;
  std::uint64_t bytes = 0;
  double idle_sum = 0, slowdown_seconds = 0;
  strategy::StalenessStats staleness;
  compress::CompressionStats compression;
  json steps_per_worker = json::array(), idle = json::array(), links = json::array();
  for (std::size_t w = 0; w < shared.totals.size(); ++w) {
    const WorkerTotals& t = shared.totals[w];
    steps_all += t.steps;
    skipped += t.skipped;
    idle_sum += t.idle_seconds;
    slowdown_seconds += t.slowdown_seconds;
    staleness.merge(t.staleness);
    compression.merge(t.compression);
    steps_per_worker.push_back(t.steps);
    idle.push_back(t.idle_seconds);
    for (std::size_t p = 0; p < t.bytes_to.size(); ++p) {
      if (p == w) continue;  // a worker's messages to itself (a co-located server) cross no link
      bytes += t.bytes_to[p];
      if (t.bytes_to[p] > 0) links.push_back({{"from", w}, {"to", p}, {"bytes", t.bytes_to[p]}});
    }
  }
  const double samples = static_cast<double>(steps_all * options.batch);
  const double epochs_done = static_cast<double>(steps_all) / static_cast<double>(steps_per_epoch * options.workers);
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
               {"steps", total_steps},
               {"steps_per_worker", steps_per_worker},
               {"epochs", epochs_done},
               {"final_accuracy", shared.final_eval["accuracy"]},
               {"final_loss", shared.final_eval["loss"]},
               {"final", options.final_model},
               {"consensus_distance", shared.final_eval["consensus_distance"]},
               {"replica_accuracy_min", shared.final_eval["replica_accuracy_min"]},
               {"replica_accuracy_max", shared.final_eval["replica_accuracy_max"]},
               {"target_accuracy", options.target_accuracy},
               {"time_to_target_seconds", shared.time_to_target >= 0 ? json(shared.time_to_target) : json(nullptr)},
               {"wall_to_target_seconds", shared.wall_to_target >= 0 ? json(shared.wall_to_target) : json(nullptr)},
               {"eval_seconds", shared.eval_seconds},
               {"wall_seconds", shared.wall_seconds},
               {"samples_per_second", samples / std::max(shared.wall_seconds, 1e-9)},
               {"bytes_sent", bytes},
               {"bytes_per_link", links},
               {"comm_seconds_mean", idle_sum / options.workers},
               {"idle_seconds", idle},
               {"staleness_mean", staleness.mean()},
               {"staleness_max", staleness.max},
               {"staleness_count", staleness.count},
               {"compress", options.worker.strategy.compress},
               {"compression_ratio", compression.ratio()},
               {"compressed_raw_bytes", compression.raw_bytes},
               {"compressed_wire_bytes", compression.wire_bytes},
               {"skipped_steps", skipped},
               {"slowdown_seconds", slowdown_seconds},
               {"param_norm", shared.param_norm},
               {"metrics", options.metrics.string()}};
  if (!shared.lost.empty()) summary["lost_workers"] = shared.lost;
  if (options.runtime == "sim") {
    // Every time above is on the simulated clock; this is the whole run's (training, final
    // evaluation and shutdown), so two runs of the same config give the same files.
    summary["simulated_seconds"] = run_seconds;
    summary["cluster"] = options.cluster.string();
  }
  json end{{"event", "end"}, {"time", shared.wall_seconds}};
  end.update(summary);
  writer.write(end);
  if (!options.summary.empty()) metrics::write_json_file(options.summary, summary);
  return summary;
}

}  // namespace fast::torch
