// train(): validation, the set-up of each worker (its model, replica, shard, strategy worker and
// evaluator), and the launch. The training schedules are in lockstep_loop.cpp and async_loop.cpp
// (WorkerLoop, worker_loop.hpp), the end-of-run combination in run_totals.cpp and summary.cpp, and
// what one process writes or shows in process_outputs.cpp.
//
// Workers share no memory: the options, the dataset and the initial parameters are read-only;
// ProcessOutputs serialises this process's output; everything combined between workers (totals,
// evaluations, the representative model) goes through collectives.

#include "fast/adapters/torch/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <torch/nn/functional/loss.h>

#include "checkpoint_store.hpp"
#include "fast/adapters/torch/buffer_sync.hpp"
#include "fast/adapters/torch/datasets.hpp"
#include "fast/adapters/torch/device.hpp"
#include "fast/adapters/torch/evaluate.hpp"
#include "fast/adapters/torch/evaluator.hpp"
#include "fast/adapters/torch/loader.hpp"
#include "fast/adapters/torch/models.hpp"
#include "fast/adapters/torch/npy.hpp"
#include "fast/adapters/torch/pooled_allocator.hpp"
#include "fast/adapters/torch/replica.hpp"
#include "fast/adapters/torch/threads.hpp"
#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/core/malloc_tuning.hpp"
#include "fast/core/memory_usage.hpp"
#include "fast/core/stop_request.hpp"
#include "fast/core/sum_of_squares.hpp"
#include "fast/runtime/detect.hpp"
#include "fast/runtime/environment.hpp"
#include "fast/runtime/launcher.hpp"
#include "fast/runtime/registry.hpp"
#include "fast/runtime/slowdown.hpp"
#include "fast/strategy/worker.hpp"
#include "fast/training/environment.hpp"
#include "fast/training/run_identity.hpp"
#include "fast/training/settings_check.hpp"
#include "process_outputs.hpp"
#include "run_checks.hpp"
#include "run_end.hpp"
#include "summary.hpp"
#include "vacant_ranks.hpp"
#include "worker_loop.hpp"

namespace fast::torch {

// The torch-free side of the loop (src/training/).
using training::add_model_fields;
using training::BudgetClaims;
using training::build_summary;
using training::CheckpointStore;
using training::DatasetSpec;
using training::end_run;
using training::EpochFn;
using training::is_generated;
using training::LoopPlan;
using training::ModelSide;
using training::parse_dataset_spec;
using training::place_process;
using training::ProcessOutputs;
using training::ProcessPlace;
using training::ProgressFn;
using training::reads_data_dir;
using training::run_asynchronous;
using training::run_lockstep;
using training::RunEnd;
using training::settings_identity;
using training::start_record;
using training::summary_builders;
using training::training_environment;
using training::TrainOptions;
using training::validate_elastic_bounds;
using training::with_fingerprint;
using training::WorkerLoop;
using training::workers_before_launch;
using training::WorkerTotals;

namespace {

// The sizes of the data (`source` names where they come from) against the workers and the batch:
// every worker scores a slice of the test set (an empty one, or fewer samples than workers, would
// only fail, or give a NaN accuracy, at the first evaluation, after training) and takes a batch per
// step (checked again by each worker's loader). InvalidArgument naming the setting otherwise.
void check_data_sizes(std::int64_t train, std::int64_t test, const TrainOptions& options, const std::string& source) {
  FAST_ENFORCE(test >= 1, "{}: the test set is empty; expected at least one sample", source);
  const int world = workers_before_launch(options);
  if (world <= 0) return;
  FAST_ENFORCE(test >= world,
               "{}: the test set has {} samples, fewer than the {} workers that each score a slice of it", source, test,
               world);
  const std::int64_t per_step = static_cast<std::int64_t>(world) * options.batch;
  FAST_ENFORCE(train >= per_step,
               "batch: {} workers x batch {} = {} samples per step, more than the {} training samples of {}; "
               "expected a smaller --batch or fewer --workers",
               world, options.batch, per_step, train, source);
}

// The processes of the run on this host: 1 for a runtime of one process (threads, sim); else what
// the launcher tells (runtime/detect.hpp: fast launch's world, mpirun's and srun's local size,
// torchrun's LOCAL_WORLD_SIZE), empty where it tells none (processes started by hand).
std::optional<int> processes_on_host(const TrainOptions& o) {
  if (!runtime::find_runtime(o.runtime).multi_process) return 1;
  const auto launcher = runtime::detect_launcher(runtime::process_environment());
  if (!launcher || launcher->local_world <= 0) return std::nullopt;
  return launcher->local_world;
}

// Workers that share this host's cores: all of them where they live in this process (threads,
// sim); else those of this process times the processes on this host that the launcher tells
// (runtime/detect.hpp: fast launch's world, mpirun's and srun's local size, torchrun's
// LOCAL_WORLD_SIZE). Empty where it tells none (processes started by hand). The runtime counts them
// again once the processes met (LaunchOptions::placed), and the larger count wins.
std::optional<int> workers_on_host(const TrainOptions& o) {
  if (!runtime::find_runtime(o.runtime).multi_process) return o.workers;
  const std::optional<int> processes = processes_on_host(o);
  if (!processes) return std::nullopt;
  return *processes * o.process.workers_per_process;
}

// Checks everything that can be checked before a worker starts, so bad input fails fast and clearly:
// the torch-free settings (the front end checked them too), then the device and the model.
void validate(const TrainOptions& o) {
  training::validate_settings(o);
  check_device(o.device);
  check_model_spec(o.model);
  FAST_ENFORCE(parse_final_model(o.final_model) != FinalModel::best || o.replica_accuracy,
               "final = best picks the replica with the highest test accuracy, which needs replica_accuracy = true "
               "(got false)");
  FAST_ENFORCE(parse_buffer_policy(o.buffers) == BufferPolicy::automatic ||
                   parse_buffer_policy(o.buffers) == BufferPolicy::local ||
                   !strategy::asynchronous_strategy(o.worker.strategy),
               "buffers = {}: a collective after every step, and strategy '{}' is asynchronous (its workers do not "
               "step together): use buffers = local or auto",
               o.buffers, o.worker.strategy.name);
}

using core::l2_norm;

// Read-only inputs of every worker of this process.
struct RunInputs {
  const TrainOptions& options;
  const DataSplits& data;
  SampleSpec input;  // the dataset's sample shape and class count
  const std::vector<float>& initial;
  double initial_norm;       // the L2 norm of `initial`
  double flops_per_sample;   // the model's (options.model_flops, or counted once from the model)
  FinalModel final_model;
  std::uint64_t process_token;  // random, the same for every worker of this process
  std::uint64_t dataset_bytes;  // of data's tensors
};

// Whether every worker runs in this process (threads, sim): the memory floor and the peak resident
// memory of this process are then the run's.
bool one_process(const TrainOptions& o) { return !runtime::find_runtime(o.runtime).multi_process; }

// Whether training `model` draws nothing from libtorch's process-wide generator (a built-in, or a
// registered model that says so): its gradients may then be computed on sim's compute threads.
bool draws_nothing(const std::string& model) {
  const ModelRegistration* m = find_model(model);
  return m != nullptr && !m->draws_random;
}

// A worker's model and its replica holding the run's initial parameters.
struct BuiltReplica {
  Model model;
  Replica replica;
};

// Builds them as a computation of no simulated time (runtime::Context::compute_overlapped): under
// sim the workers build theirs side by side on the compute threads. The model comes from
// make_model_to_load: mlp's construction draws nothing, cnn's its convolutions only; another
// model's construction may draw its own parameters from libtorch's process-wide generator, against
// compute_overlapped's rule, allowed here only because nothing depends on them: the initial
// parameters replace them, and the model draws nothing else from that generator (draws_nothing;
// otherwise built inline, in order).
BuiltReplica build_replica(runtime::Context& ctx, const RunInputs& in) {
  std::optional<Model> model;
  std::optional<Replica> replica;
  const auto build = [&] {
    model.emplace(make_model_to_load(in.options.model, in.input));
    replica.emplace(
        *model,
        Replica::Placement{.device = worker_device(in.options.device, ctx.rank()), .staged = in.options.device_staging},
        core::ConstView(std::span<const float>(in.initial)));  // the model's values unread
  };
  if (draws_nothing(in.options.model))
    ctx.compute_overlapped(0, build);
  else
    build();
  return {std::move(*model), std::move(*replica)};
}

// One worker's libtorch objects; ModelSide for its WorkerLoop.
class TorchWorker final : public ModelSide {
 public:
  TorchWorker(runtime::Context& ctx, const RunInputs& in) : TorchWorker(ctx, in, build_replica(ctx, in)) {}
  TorchWorker(runtime::Context& ctx, const RunInputs& in, BuiltReplica built)
      : model_(std::move(built.model)),
        replica_(std::move(built.replica)),
        loader_(in.data.train, ctx.rank(), ctx.size(), in.options.batch, in.options.seed),
        replica_accuracy_(in.options.replica_accuracy),
        private_gradient_(draws_nothing(in.options.model)),
        buffers_(model_, resolve_buffer_policy(parse_buffer_policy(in.options.buffers),
                                               strategy::asynchronous_strategy(in.options.worker.strategy))) {}
  strategy::ModelState state() {
    return {.params = replica_.param_span(), .grads = replica_.grad_span(), .layout = replica_.layout()};
  }
  std::int64_t steps_per_epoch() const { return loader_.steps_per_epoch(); }
  // After the strategy worker exists (the evaluator uses its communicator).
  void attach(strategy::Worker& worker, const RunInputs& in) {
    evaluator_.emplace(worker, replica_, model_, in.data.test, in.final_model, private_gradient_);
  }

  double gradient(std::int64_t epoch, std::int64_t index) override {
    const Batch batch = loader_.batch(epoch, index);
    replica_.zero_grad();
    replica_.to_device();  // staged (a GPU): the parameters the strategy left on the host
    const ::torch::Device device = replica_.device();
    ::torch::Tensor loss =
        ::torch::nn::functional::cross_entropy(model_.forward(batch.x.to(device)), batch.y.to(device));
    loss.backward();
    replica_.from_device();  // staged: the gradient, for Worker::step() on the host
    return loss.item<double>();
  }
  bool gradient_is_private() const override { return private_gradient_; }
  // A mid-run round's representative (in the gradient, which the next step overwrites) is not
  // read after its record.
  metrics::EvalRecord evaluate(bool final_round) override {
    const RoundResult round = evaluator_->run(final_round && replica_accuracy_);
    const metrics::EvalRecord r = record(round, evaluator_->representative_norm());
    if (!final_round) evaluator_->release_representative();
    return r;
  }
  metrics::EvalRecord snapshot() override {
    const RoundResult round = evaluator_->snapshot_round();
    // Inline, not on the compute threads: a snapshot comes mid-run in an asynchronous run, where
    // one more scheduling point would change the interleaving of the workers under sim.
    const metrics::EvalRecord r = record(round, l2_norm(evaluator_->representative()));
    evaluator_->release_representative();
    return r;
  }
  std::span<const float> representative() const override { return evaluator_->representative(); }
  void sync_buffers(collective::Communicator& comm) override { buffers_.sync(comm); }

 private:
  // The record of an evaluation; param_norm is the norm of the model it scored (the evaluator's
  // representative).
  static metrics::EvalRecord record(const RoundResult& r, double param_norm) {
    return {.accuracy = r.representative.accuracy,
            .loss = r.representative.loss,
            .samples = r.representative.samples,
            .consensus_distance = r.consensus_distance,
            .replica_accuracy_min = r.replica_accuracy_min,
            .replica_accuracy_max = r.replica_accuracy_max,
            .representative_rank = r.representative_rank,
            .param_norm = param_norm};
  }

  Model model_;
  Replica replica_;
  ShardedLoader loader_;
  std::optional<Evaluator> evaluator_;
  bool replica_accuracy_;
  bool private_gradient_;  // gradient_is_private()
  BufferSync buffers_;
};

// Lockstep runs agree on stopping after every k-th step (WorkerLoop::stop_agreed), k the steps
// of about this many floating-point operations (about 0.1 s of a CPU core at 20 Gflop/s), in
// [1, kMaxStopCheckSteps]: a signal stops a run within k steps, and the agreement (one all-gather
// of 8 bytes per worker) costs little next to k steps. From the model's flops, not from measured
// times, so every run of the same options sends the same bytes.
constexpr double kStopCheckFlops = 2e9;
constexpr std::int64_t kMaxStopCheckSteps = 64;

std::int64_t stop_check_every(double flops_per_step) {
  if (flops_per_step * kMaxStopCheckSteps <= kStopCheckFlops) return kMaxStopCheckSteps;  // also 0 flops
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(kStopCheckFlops / flops_per_step));
}

LoopPlan make_plan(const TrainOptions& o, double flops, std::int64_t classes, std::int64_t steps_per_epoch,
                   double initial_norm) {
  return {.steps_per_epoch = steps_per_epoch,
          .total_steps = o.steps > 0 ? o.steps : o.epochs * steps_per_epoch,
          .eval_interval_steps = o.eval_every > 0 ? o.eval_every : steps_per_epoch,
          .batch = o.batch,
          .log_every = o.log_every,
          .flops_per_step = flops * static_cast<double>(o.batch),
          .initial_norm = initial_norm,
          .classes = static_cast<int>(classes),
          .stop_on_divergence = o.stop_on_divergence,
          .checkpoint_every = o.checkpoint_every,
          // Under sim a signal ends the process as it always did: an agreement would add collectives
          // to the simulated run, whose timings must not depend on whether handlers are installed.
          .stoppable = !runtime::find_runtime(o.runtime).simulated_clock && core::stop_handlers_installed(),
          .stop_check_every = stop_check_every(flops * static_cast<double>(o.batch)),
          .elastic = o.elastic,
          .min_workers = o.min_workers};
}

// This worker's totals for the summary at the end of its run (run_end.hpp's RunEndInputs::totals).
WorkerTotals own_totals(WorkerLoop& loop, TorchWorker& torch_side, const BudgetClaims& claims, double train_end,
                        bool first_member) {
  WorkerTotals mine = loop.totals();
  mine.claims = claims.claims;
  mine.budget_counter = claims.counter;
  mine.wall_seconds = train_end;
  if (first_member) {  // the summary reads the first member's
    mine.param_norm = l2_norm(torch_side.representative());
    mine.param_hash = metrics::parameter_hash64(torch_side.representative());
  }
  // This worker's own replica, hashed as a computation of no simulated time: under sim the
  // compute threads hash the replicas together.
  loop.context().compute_overlapped(
      0, [&mine, &torch_side] { mine.replica_hash = metrics::parameter_hash64(torch_side.state().params); });
  mine.stopped_by = loop.stopped_by();
  mine.state_bytes = static_cast<std::int64_t>(loop.worker().state_bytes());
  return mine;
}

// The whole life of one worker: set-up, its schedule, the final evaluation, the combination of
// the totals, and (one worker per process) the summary into `outputs`.
void run_worker(runtime::Context& ctx, const RunInputs& in, ProcessOutputs& outputs) {
  const TrainOptions& o = in.options;
  if (ctx.joins_run_under_way()) {  // a new process that took a lost worker's rank back (zmq)
    // An elastic synchronous run admits it at a step boundary; an asynchronous one takes it back.
    const std::string refusal = o.elastic ? strategy::elastic_refusal(o.worker.strategy)
                                          : strategy::rejoin_refusal(o.worker.strategy, ctx.rank());
    FAST_ENFORCE(refusal.empty(), "rejoin: this process would take worker {} back into the run under way, but {}",
                 ctx.rank(), refusal);
  }
  validate_elastic_bounds(o, ctx.size());  // the world under zmq and mpi is known from here on
  if (o.elastic && ctx.rank() == 0)
    if (const std::string warning = strategy::elastic_group_warning(o.worker.strategy, o.min_workers,
                                                                    std::max(ctx.size(), o.process.max_workers));
        !warning.empty())
      core::log(core::LogLevel::warn, "elastic: {}", warning);
  TorchWorker torch_side(ctx, in);
  LoopPlan plan = make_plan(o, in.flops_per_sample, in.input.classes, torch_side.steps_per_epoch(), in.initial_norm);
  runtime::SlowdownOptions slowdown_options = o.slowdown;
  slowdown_options.seed = o.seed;
  runtime::Slowdown slowdown(slowdown_options, ctx.rank(), ctx.size());
  strategy::WorkerOptions worker_options = o.worker;
  if (worker_options.schedule.total_steps == 0) worker_options.schedule.total_steps = plan.total_steps;
  worker_options.strategy.seed = o.seed;
  worker_options.communicator.elastic = o.elastic;
  if (o.dgc_warmup_epochs > 0)
    worker_options.strategy.dgc_warmup_steps =
        std::max<std::int64_t>(1, std::llround(o.dgc_warmup_epochs * static_cast<double>(plan.steps_per_epoch)));
  strategy::Worker worker(ctx, worker_options, torch_side.state());
  torch_side.attach(worker, in);
  if (o.elastic) training::leave_out_vacant_ranks(ctx, worker, o.min_workers);  // a run that may grow (max_workers)
  // The module's own parameter blocks, freed once copied into the replica, sit below this worker's
  // live objects in the heap: their pages go back, a batch of workers' at a time (core/malloc_tuning.hpp).
  core::release_freed_memory(torch_side.state().params.size_bytes());
  nlohmann::json identity = settings_identity(o, ctx.size());
  add_model_fields(identity, in.initial.size(), torch_side.state().layout, in.data.train->size());
  identity = with_fingerprint(std::move(identity));
  const std::filesystem::path resume_from = o.resume_if_present ? o.checkpoint_dir : o.resume;
  if (!resume_from.empty() && !ctx.joins_run_under_way()) {  // a rejoining worker takes a neighbour's model
    // resume_if_present: the first member's listing decides for every worker (-1: none, start anew).
    const std::int64_t step =
        CheckpointStore::restore_newest(resume_from, worker, identity, o.resume_if_present, plan.total_steps);
    plan.resumed = step >= 0;
    plan.first_step = std::max<std::int64_t>(step, 0);
  }
  std::optional<CheckpointStore> checkpoints;
  if (!o.checkpoint_dir.empty()) checkpoints.emplace(o.checkpoint_dir, o.checkpoint_keep, identity);
  const ProcessPlace place = place_process(ctx, worker.communicator(), in.process_token);
  outputs.open(o.metrics, place.first_rank, place.whole_world, place.hosts_rank0,
               start_record(o, plan, ctx.size(), in.initial.size()));

  WorkerLoop loop(ctx, worker, slowdown, torch_side, outputs, plan);
  if (checkpoints) loop.set_checkpoints(&*checkpoints);
  const bool asynchronous = worker.strategy().asynchronous();
  if (checkpoints && !ctx.joins_run_under_way()) checkpoints->discard_newer(worker, plan.first_step);
  BudgetClaims claims;
  if (asynchronous)
    claims = run_asynchronous(loop);  // ends with Worker::finish()
  else
    run_lockstep(loop);
  const double train_end = loop.elapsed();
  if (!asynchronous) loop.flush_train_record();
  const std::optional<std::uint64_t> dataset_bytes =
      one_process(o) ? std::optional(in.dataset_bytes) : std::nullopt;  // no floor across processes
  const auto summary_of = [&](const RunEnd& e) {
    return build_summary({.options = o,
                          .plan = plan,
                          .parameters = in.initial.size(),
                          .final_eval = e.final_eval,
                          .totals = *e.totals,
                          .communicator = worker.communicator(),
                          .checkpoint = loop.last_checkpoint(),
                          .checkpoint_step = loop.last_checkpoint_step(),
                          .run = identity,
                          .checkpoint_error = e.checkpoint_error,
                          .below_min_workers = loop.below_min_workers(),
                          .dataset_bytes = dataset_bytes});
  };
  // Processes that can be lost one by one: the leading process writes the summary file, and the
  // first member the model file, before the end's barrier, so that a loss after that barrier (which
  // lets the others leave) loses no file. A model file that cannot be written is written again, and
  // its error raised, after the end (publish throws nothing but PeerLost).
  std::function<void(const RunEnd&)> publish;
  bool model_written = false;
  if (!one_process(o))
    publish = [&](const RunEnd& e) {
      if (e.totals) outputs.publish_summary(o.summary, summary_of(e));
      if (o.save_model.empty() || !e.first_member) return;
      try {
        write_npy(o.save_model, torch_side.representative());
        model_written = true;
      } catch (const core::IoError&) {
        model_written = false;
      }
    };
  const RunEnd end = end_run(
      loop, {.asynchronous = asynchronous,
             .runtime_loses_workers = runtime::find_runtime(o.runtime).loses_workers,
             .totals = [&](bool first_member) { return own_totals(loop, torch_side, claims, train_end, first_member); },
             .readers = [&] { return summary_builders(worker.communicator(), place); },
             .publish = publish});
  if (!o.save_model.empty() && end.first_member && !model_written) write_npy(o.save_model, torch_side.representative());
  if (end.totals && !end.published) outputs.offer_summary(summary_of(end));
}

// The metrics' end record and the summary file. A write that fails does not stop the other; the
// summary then goes to stderr (nothing of the finished run is lost), and IoError names what was not
// written.
void write_outputs(const TrainOptions& options, ProcessOutputs& outputs, const nlohmann::json& summary) {
  std::vector<std::string> lost;
  try {
    outputs.write_end(summary["wall_seconds"].get<double>(), summary);
  } catch (const core::IoError& e) {
    lost.push_back(fmt::format("the metrics' end record ({})", e.what()));
  }
  try {
    outputs.write_summary_file(options.summary, summary);
  } catch (const core::IoError& e) {
    lost.push_back(fmt::format("the summary file ({})", e.what()));
    core::log(core::LogLevel::error, "summary: not written to '{}'; it is: {}", options.summary.string(),
              summary.dump());
  }
  FAST_ENFORCE_AS(core::IoError, lost.empty(), "train: the run finished, but {} could not be written",
                  fmt::join(lost, " and "));
}

// Calls core::release_free_memory() when its scope ends, by a return or an exception.
class FreeMemoryOnExit {
 public:
  FreeMemoryOnExit() = default;
  ~FreeMemoryOnExit() { core::release_free_memory(); }
  FreeMemoryOnExit(const FreeMemoryOnExit&) = delete;
  FreeMemoryOnExit& operator=(const FreeMemoryOnExit&) = delete;
};

}  // namespace

void validate_options(const TrainOptions& options) { validate(options); }

namespace {

nlohmann::json run_training(const TrainOptions& options, const ProgressFn& progress, const EpochFn& on_epoch,
                            ProcessReport* process) {
  validate(options);
  // The same large tensors every step: keep their memory in the heap (core/malloc_tuning.hpp);
  // before the data is read, whose decoding is the first work of other threads, so that their
  // blocks come from the one heap too.
  const core::MallocTuning malloc_tuning = core::tune_malloc();
  core::log(malloc_tuning.applied ? core::LogLevel::info : core::LogLevel::debug, "{}", malloc_tuning.reason);
  // The tuned heap keeps its peak until asked: back to the caller's process however the run ends (a
  // caller that catches a failed run, e.g. Python, goes on with the memory the run took).
  const FreeMemoryOnExit free_memory_on_exit;
  if (runtime::find_runtime(options.runtime).simulated_clock) use_pooled_cpu_allocator();  // see its header
  const DatasetSpec spec = parse_dataset_spec(options.dataset);
  const std::string source =
      !reads_data_dir(spec) ? fmt::format("dataset '{}'", options.dataset)
      : options.data_dir.empty()
          ? fmt::format("FAST_DATA_DIR '{}'", core::env_string(training_environment(), "FAST_DATA_DIR"))
          : fmt::format("data_dir '{}'", options.data_dir.string());
  if (is_generated(spec)) {  // its sizes are known before the data are made
    const training::SyntheticSpec sizes = training::synthetic_spec(spec);
    check_data_sizes(sizes.n_train, sizes.n_test, options, source);
  }
  // A synthetic dataset is made on this process's share of the cores (its workers do not run yet);
  // processes started by hand each take every core, as their threads do below.
  const int data_threads = std::max(1, available_cores() / processes_on_host(options).value_or(1));
  core::log(core::LogLevel::debug, "dataset: made on {} thread(s)", data_threads);
  const DataSplits data = load_datasets(spec, options.data_dir, data_threads);
  check_data_sizes(data.train->size(), data.test->size(), options, source);
  const SampleSpec input{.shape = data.train->sample_shape(), .classes = data.train->classes};
  // Every worker's initial parameters, from one model built here and checked against the data first.
  const std::vector<float> initial = [&] {
    Model model = make_model(options.model, input);
    check_model_fits(model, input);
    check_model_to_load(options.model, input, model);
    return initial_parameters(model, options.seed);
  }();
  // Intra-op threads: this process's cores divided among its workers, under sim as under threads.
  // Under sim at most min(sim_threads, workers) gradients run at once (one per compute thread), so
  // cores / workers each never oversubscribes the cores, and the count, hence every floating-point
  // result, is the same for any sim_threads. More per gradient would not pay either: each OS thread
  // has its own OpenMP team, whose idle threads spin after every parallel region (with 2 threads
  // per actor, hundreds of simulated workers spent most of the CPU spinning in libgomp;
  // docs/simulation.md, "Scale").
  // Processes started by hand: sized for this process alone until the runtime has counted the
  // workers on this machine (processes that each take every core spin their OpenMP teams against
  // each other: docs/benchmarks.md, (e), "Processes started by hand").
  const std::optional<int> on_host = workers_on_host(options);
  configure_torch_threads(on_host.value_or(options.process.workers_per_process), !on_host.has_value());

  const RunInputs inputs{
      .options = options,
      .data = data,
      .input = input,
      .initial = initial,
      .initial_norm = l2_norm(initial),
      // Counted once here: for a built-in model it builds one more (each worker did).
      .flops_per_sample = options.model_flops > 0 ? options.model_flops : model_flops_per_sample(options.model, input),
      .final_model = parse_final_model(options.final_model),
      .process_token = std::random_device{}() * 0x100000000ULL + std::random_device{}(),
      .dataset_bytes = data.train->bytes() + data.test->bytes()};
  ProcessOutputs outputs(progress, on_epoch);
  // Asynchronous strategies go on without a worker lost with its host (docs/simulation.md,
  // "Failures"), elastic synchronous ones too; other synchronous ones end with its PeerLost.
  runtime::LaunchOptions launch = training::launch_options(options);
  // More workers share this machine than the launcher said (processes started by hand, a launch's
  // hosts that are containers or namespaces of one machine): sized again by them.
  launch.placed = [&](int workers_on_machine) {
    if (workers_on_machine > on_host.value_or(0)) configure_torch_threads_on_machine(workers_on_machine);
  };
  const double run_seconds = runtime::launch(launch, [&](runtime::Context& ctx) { run_worker(ctx, inputs, outputs); });

  std::optional<nlohmann::json> summary = outputs.summary();
  FAST_ENFORCE_AS(core::PeerLost, summary.has_value(), "train: every worker of this process was lost; no summary");
  if (runtime::find_runtime(options.runtime).simulated_clock) {
    // Every time above is on the simulated clock; this is the whole run's (training, final
    // evaluation and shutdown), so two runs of the same config give the same files.
    (*summary)["simulated_seconds"] = run_seconds;
    (*summary)["cluster"] = options.cluster.string();
  }
  if (one_process(options)) (*summary)["peak_rss_bytes"] = core::peak_rss_bytes();
  write_outputs(options, outputs, *summary);
  if (process != nullptr)
    *process = {.hosts_worker_zero = outputs.hosts_rank0(), .metrics_file = outputs.metrics_path()};
  return *summary;
}

}  // namespace

nlohmann::json train(const TrainOptions& options, const ProgressFn& progress, const EpochFn& on_epoch,
                     ProcessReport* process) {
  try {
    return run_training(options, progress, on_epoch, process);
  } catch (const c10::Error& e) {
    // libtorch's own failure (memory it could not allocate, most often): its message, without the
    // backtrace and source location it carries.
    FAST_THROW(core::Error, "libtorch: {}", libtorch_message(e.what()));
  }
}

}  // namespace fast::torch
