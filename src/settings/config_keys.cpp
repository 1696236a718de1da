// The table of `fast train`'s general settings (key_builders.hpp, general_keys()), one function per
// group, in documentation order (docs/config.md): each key is declared once, with its type, what
// it accepts, its description, its setter and its getter.

#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/adapters/torch/buffer_policy.hpp"
#include "fast/collective/allreduce_algorithm.hpp"
#include "fast/core/error.hpp"
#include "fast/core/spec.hpp"
#include "fast/optim/optimizer.hpp"
#include "fast/optim/schedule.hpp"
#include "fast/runtime/cluster.hpp"
#include "fast/runtime/registry.hpp"
#include "fast/strategy/registry.hpp"
#include "fast/training/dataset_spec.hpp"
#include "fast/training/device_spec.hpp"
#include "fast/training/model_names.hpp"
#include "key_builders.hpp"

namespace fast::settings::detail {

namespace {

using training::TrainOptions;

// The help of `runtime`, `strategy`: the registries' names with their one-line descriptions.
std::string runtime_help() {
  std::vector<std::string> items;
  for (const runtime::RuntimeBackend& b : runtime::runtime_backends())
    items.push_back(fmt::format("{} ({})", b.name, b.description));
  return fmt::format(
      "Where workers run, one of this build's runtimes: {}. Unset (`fast train`): the launcher's runtime (zmq under "
      "fast launch and torchrun, mpi under mpirun and srun), else threads; a runtime that contradicts the launcher "
      "is refused. docs/launch.md, docs/simulation.md.",
      fmt::join(items, "; "));
}

std::string strategy_help() {
  std::vector<std::string> items;
  for (const auto& [name, summary] : strategy::strategy_summaries())
    items.push_back(fmt::format("{} ({})", name, summary));
  return fmt::format("Coordination strategy: {}. docs/strategies.md.", fmt::join(items, ", "));
}

// The values of the settings that take one of a fixed list (each setter checks against the same list).
const std::vector<std::string> kFinalModels{"average", "rank0", "best"};
const std::vector<std::string> kElasticLr{"keep", "linear"};  // strategy::ElasticLr, in its order

// Where and how the run runs: the runtime, its cluster, the workers and their strategy.
std::vector<ConfigKey> run_keys() {
  return {
      text_key(
          "runtime", KeyType::string, one_of_text(runtime::runtime_names()), runtime_help(),
          [](TrainOptions& o, const std::string& v) { o.runtime = one_of(v, runtime::runtime_names(), "runtime"); },
          [](const TrainOptions& o) { return o.runtime; }),
      per_process(text_key(
          "cluster", KeyType::path, "a .toml or .xml file; or empty",
          "sim: the simulated cluster, a .toml description or a SimGrid platform .xml (docs/clusters.md); empty: "
          "one 1 Gflop/s host per worker on a 10 Gb/s switch.",
          [](TrainOptions& o, const std::string& v) {
            if (!v.empty()) (void)runtime::load_cluster(v);  // rejects a bad file here, naming it
            o.cluster = v;
          },
          [](const TrainOptions& o) { return o.cluster.string(); })),
      per_process(FAST_INT_KEY("workers", "Number of workers.", workers, 1)),
      text_key(
          "strategy", KeyType::string, one_of_text(strategy::strategy_names()), strategy_help(),
          [](TrainOptions& o, const std::string& v) {
            o.worker.strategy.name = one_of(v, strategy::strategy_names(), "strategy");
          },
          [](const TrainOptions& o) { return o.worker.strategy.name; }),
  };
}

// The model, where it computes, and the data it trains on.
std::vector<ConfigKey> model_and_data_keys() {
  return {
      text_key(
          "model", KeyType::string,
          fmt::format("one of: {}; or a TorchScript file", fmt::join(training::model_names(), ", ")),
          fmt::format(
              "Model: {} (built-in, sized by the dataset's sample shape and classes), a model the program registered "
              "(docs/models.md, \"Adding a model\"), or a TorchScript file (a "
              "path with '/' or ending in .pt, saved with torch.jit.script(m).save(path)). docs/models.md.",
              fmt::join(training::model_names(), ", ")),
          [](TrainOptions& o, const std::string& v) { o.model = v; }, [](const TrainOptions& o) { return o.model; }),
      per_process(text_key(
          "device", KeyType::string, "cpu, cuda or cuda:K",
          "Where each worker computes: cpu; cuda (worker r on GPU r mod the GPUs its process sees); cuda:K (every "
          "worker of the process on GPU K). On a GPU the model, its flat parameter and gradient buffers and the "
          "batches "
          "are in device memory, and the strategy works on host copies refreshed each step. Needs FAST built against "
          "a CUDA-enabled libtorch (docs/gpu.md); checked before any data is read.",
          [](TrainOptions& o, const std::string& v) {
            (void)training::parse_device(v, "device");  // its form; whether that GPU is there, before the run
            o.device = v;
          },
          [](const TrainOptions& o) { return o.device; })),
      FAST_NUMBER_KEY("model_flops",
                      "Floating-point operations to train on one sample (forward + backward); 0: "
                      "computed from the model (a TorchScript file: 6 x its parameters). Sets the compute time under "
                      "sim, and elsewhere how often lockstep workers agree on a stop after SIGINT/SIGTERM (every k "
                      "steps of about 2e9 flops, 1 <= k <= 64: docs/faults.md).",
                      model_flops, .at_least(0)),
      text_key(
          "dataset", KeyType::string, "a dataset spec (docs/data.md)",
          fmt::format("Dataset: fashion-mnist (the IDX files of data_dir), npz (arrays x and y), npy or synthetic: {} "
                      "(keys and defaults: Spec strings, dataset). docs/data.md.",
                      training::dataset_family().usages()),
          [](TrainOptions& o, const std::string& v) {
            (void)training::parse_dataset_spec(v);  // its form; its files before any data is read
            o.dataset = v;
          },
          [](const TrainOptions& o) { return o.dataset; }),
      per_process(applies_when(text_key(
                                   "data_dir", KeyType::path, "a folder",
                                   "fashion-mnist: folder of the four IDX files, gzip or not (default: FAST_DATA_DIR).",
                                   [](TrainOptions& o, const std::string& v) { o.data_dir = v; },
                                   [](const TrainOptions& o) {
                                     return o.data_dir.empty() ? std::string("$FAST_DATA_DIR") : o.data_dir.string();
                                   }),
                               [](const TrainOptions& o) -> std::optional<std::string> {
                                 try {
                                   if (training::reads_data_dir(training::parse_dataset_spec(o.dataset)))
                                     return std::nullopt;
                                 } catch (const core::Error&) {
                                   return std::nullopt;  // a bad spec: the settings' validation names its error
                                 }
                                 return fmt::format("dataset = '{}'", o.dataset);
                               })),
      FAST_INT_KEY_UP_TO("epochs", "Passes over the training set (used when steps = 0).", epochs, 1,
                         training::kMaxEpochs),
      FAST_INT_KEY_UP_TO("steps", "Steps per worker; 0 means epochs x steps per epoch.", steps, 0,
                         training::kMaxSteps),
      FAST_INT_KEY("batch", "Mini-batch size per worker.", batch, 1),
  };
}

// An optimizer option's key, named in a warning where the chosen optimizer does not read it.
ConfigKey read_by_optimizer(ConfigKey key) {
  std::string option = key.name;
  return applies_when(std::move(key), [option](const TrainOptions& o) -> std::optional<std::string> {
    if (optim::optimizer_reads(o.worker.optimizer.name, option)) return std::nullopt;
    return fmt::format("optimizer = {}", o.worker.optimizer.name);
  });
}

// The momentum key, whose 0 says "no momentum" under any optimizer (PyTorch's SGD(momentum=0)):
// given as 0, it draws no "changes nothing" warning.
ConfigKey quiet_when_no_momentum(ConfigKey key) {
  auto inert = std::move(key.inert);
  key.inert = [inert](const TrainOptions& o) -> std::optional<std::string> {
    if (o.worker.optimizer.momentum == 0) return std::nullopt;
    return inert(o);
  };
  return key;
}

// The optimizer and its hyper-parameters.
std::vector<ConfigKey> optimizer_keys() {
  return {
      declared_key(
          // > 0 and finite as float32 (the parameters' type): 1e39 is a double but makes every update infinite.
          FAST_NUMBER_DECLARATION(
              "lr", "Base learning rate; default: 0.05 for sgd, momentum and nesterov, 0.001 for adam and adamw.",
              .greater_than(0).at_most(std::numeric_limits<float>::max())),
          [](TrainOptions& o, const core::SettingValue& v) {
            o.worker.optimizer.lr = number_of(v);
            o.lr_given = true;
          },
          [](const TrainOptions& o) { return text(o.worker.optimizer.lr); }),
      text_key(
          "optimizer", KeyType::string, one_of_text(optim::optimizer_names()),
          "Optimizer: sgd, momentum, nesterov, adam or adamw.",
          [](TrainOptions& o, const std::string& v) {
            o.worker.optimizer.name = one_of(v, optim::optimizer_names(), "optimizer");
            if (!o.lr_given) o.worker.optimizer.lr = training::default_lr(o.worker.optimizer.name);
          },
          [](const TrainOptions& o) { return o.worker.optimizer.name; }),
      quiet_when_no_momentum(read_by_optimizer(FAST_NUMBER_KEY(
          "momentum",
          "Momentum factor of momentum and nesterov, in [0, 1); they need it > 0 (without momentum: optimizer sgd, "
          "which accepts 0).",
          worker.optimizer.momentum, .at_least(0).less_than(1)))),
      FAST_NUMBER_KEY("weight_decay", "Weight decay (L2 in the gradient; decoupled for adamw).",
                      worker.optimizer.weight_decay, .at_least(0)),
      read_by_optimizer(FAST_NUMBER_KEY("beta1", "Adam/AdamW first-moment decay.", worker.optimizer.beta1,
                                        .at_least(0).less_than(1))),
      read_by_optimizer(FAST_NUMBER_KEY("beta2", "Adam/AdamW second-moment decay.", worker.optimizer.beta2,
                                        .at_least(0).less_than(1))),
      read_by_optimizer(FAST_NUMBER_KEY("eps", "Adam/AdamW denominator term.", worker.optimizer.eps, .greater_than(0))),
  };
}

// A schedule option's key, named in a warning where the chosen schedule does not read it.
ConfigKey read_by_schedule(ConfigKey key) {
  std::string option = key.name;
  return applies_when(std::move(key), [option](const TrainOptions& o) -> std::optional<std::string> {
    if (optim::schedule_reads(o.worker.schedule.name, option)) return std::nullopt;
    return fmt::format("schedule = {}", o.worker.schedule.name);
  });
}

// The learning-rate schedule, and the seed.
std::vector<ConfigKey> schedule_keys() {
  return {
      text_key(
          "schedule", KeyType::string, one_of_text(optim::schedule_names()),
          "Learning-rate schedule: constant, step or cosine.",
          [](TrainOptions& o, const std::string& v) {
            o.worker.schedule.name = one_of(v, optim::schedule_names(), "schedule");
          },
          [](const TrainOptions& o) { return o.worker.schedule.name; }),
      FAST_INT_KEY("warmup_steps", "Linear warm-up: over the first N steps the lr is scaled by (step+1)/N (0: none).",
                   worker.schedule.warmup_steps, 0),
      read_by_schedule(FAST_INT_KEY("step_size", "step schedule: multiply the lr by gamma every step_size steps.",
                                    worker.schedule.step_size, 1)),
      read_by_schedule(
          FAST_NUMBER_KEY("gamma", "step schedule: decay factor.", worker.schedule.gamma, .greater_than(0))),
      read_by_schedule(FAST_NUMBER_KEY("min_lr_factor", "cosine schedule: final lr as a fraction of the base lr.",
                                       worker.schedule.min_lr_factor, .at_least(0).at_most(1))),
      FAST_INT_KEY("seed",
                   "Seed of model initialisation and data order, and of what strategies draw at random (random "
                   "topologies and schedules, peer choices, the gossip coin; docs/strategies.md).",
                   seed, 0),
  };
}

// What the run writes (metrics, summary, model, checkpoints), how it resumes and survives lost workers.
std::vector<ConfigKey> output_keys() {
  return {
      per_process(set_by_compare(text_key(
          "metrics", KeyType::path, "a file; or empty", "JSONL metrics file (docs/metrics.md); empty: none.",
          [](TrainOptions& o, const std::string& v) { o.metrics = v; },
          [](const TrainOptions& o) { return o.metrics.string(); }))),
      per_process(set_by_compare(text_key(
          "summary", KeyType::path, "a file; or empty", "JSON summary file written at the end; empty: none.",
          [](TrainOptions& o, const std::string& v) { o.summary = v; },
          [](const TrainOptions& o) { return o.summary.string(); }))),
      refused_by_compare(
          per_process(text_key(
              "save_model", KeyType::path, "a file; or empty",
              "Write the final representative model's flat float32 parameters to this .npy file (numpy.load reads it; "
              "written by the process of its lowest-ranked worker); empty: none.",
              [](TrainOptions& o, const std::string& v) { o.save_model = v; },
              [](const TrainOptions& o) { return o.save_model.string(); })),
          "every run of the comparison would write its model to the same file"),
      refused_by_compare(
          per_process(text_key(
              "checkpoint_dir", KeyType::path, "a folder; or empty",
              "Folder of this run's checkpoints (docs/faults.md): one file per worker and a manifest per checkpoint, "
              "written every checkpoint_every steps, at the end and on SIGINT/SIGTERM; shared by every process of the "
              "run. Every strategy, with every codec and dgc. Empty: none.",
              [](TrainOptions& o, const std::string& v) { o.checkpoint_dir = v; },
              [](const TrainOptions& o) { return o.checkpoint_dir.string(); })),
          "every run of the comparison would write its checkpoints to the same folder"),
      FAST_INT_KEY("checkpoint_every",
                   "A checkpoint every this many steps per worker (asynchronous strategies: each worker every this "
                   "many of its own steps, without waiting for the others; not with compress or dgc); 0: only at the "
                   "end and on SIGINT/SIGTERM. Needs checkpoint_dir.",
                   checkpoint_every, 0),
      applies_when(
          FAST_INT_KEY("checkpoint_keep", "Complete checkpoints kept in checkpoint_dir; older ones are removed.",
                       checkpoint_keep, 1),
          [](const TrainOptions& o) -> std::optional<std::string> {
            if (!o.checkpoint_dir.empty()) return std::nullopt;
            return "no checkpoint_dir";
          }),
      refused_by_compare(
          per_process(text_key(
              "resume", KeyType::path, "a folder; or empty",
              "Continue from the newest complete checkpoint in this folder (an earlier run's checkpoint_dir; the same "
              "workers, model, dataset, batch, seed, strategy and optimizer): parameters, optimizer state, step and "
              "data "
              "position. steps and epochs still count from the start of the run. Empty: start anew.",
              [](TrainOptions& o, const std::string& v) { o.resume = v; },
              [](const TrainOptions& o) { return o.resume.string(); })),
          "every run of the comparison would continue from the same checkpoint"),
      refused_by_compare(
          text_key(
              "resume_if_present", KeyType::boolean, "true or false",
              "Resume from the newest complete checkpoint in checkpoint_dir when it holds one, else start anew (an "
              "empty "
              "or absent folder): the same command for a job's first start and its restarts (fast launch --restart, a "
              "requeued batch job). Needs checkpoint_dir; excludes resume.",
              [](TrainOptions& o, const std::string& v) { o.resume_if_present = parse_bool(v, "resume_if_present"); },
              [](const TrainOptions& o) { return std::string(o.resume_if_present ? "true" : "false"); }),
          "every run of the comparison would continue from the same checkpoint"),
      text_key(
          "elastic", KeyType::boolean, "true or false",
          "Synchronous strategies: when a worker is lost, the survivors agree on a new group at once, take the state "
          "of the one that took the most steps and go on with fewer workers (docs/faults.md, \"Elastic synchronous "
          "training\"); without it a lost worker ends the run. For runtimes that lose workers (zmq, sim) and "
          "strategies that declare it (allreduce, with a codec or dgc too; local-sgd, with a codec too; ps in mode "
          "sync and dpsgd without either; none with a robust aggregate).",
          [](TrainOptions& o, const std::string& v) { o.elastic = parse_bool(v, "elastic"); },
          [](const TrainOptions& o) { return std::string(o.elastic ? "true" : "false"); }),
      text_key(
          "elastic_lr", KeyType::string, one_of_text(kElasticLr),
          "Elastic runs: the learning rate after the group changed. keep: the schedule's, whatever the group's size; "
          "linear: the schedule's times W_now / W_start (the workers in the group over the run's ranks: those it "
          "started with, or max_workers), "
          "so that the step per sample stays what it was. Needs elastic.",
          [](TrainOptions& o, const std::string& v) {
            o.worker.elastic_lr = one_of(v, kElasticLr, "elastic_lr") == "linear" ? strategy::ElasticLr::linear
                                                                                  : strategy::ElasticLr::keep;
          },
          [](const TrainOptions& o) { return kElasticLr[o.worker.elastic_lr == strategy::ElasticLr::linear ? 1 : 0]; }),
      FAST_INT_KEY("min_workers",
                   "Elastic runs: a loss that leaves fewer workers in the group ends the run at once, with its "
                   "checkpoint (checkpoint_dir), its evaluation and its summary, and exit code 6 (docs/faults.md). "
                   "At most the run's workers; 1: the run goes on down to one worker.",
                   min_workers, 1),
      FAST_INT_KEY("max_workers",
                   "Elastic runs under zmq: the most workers the run may grow to. The starting processes "
                   "(world_size x workers_per_process workers) begin; the ranks after theirs are vacant until a "
                   "process started with FAST_RESTARTED=1 and the same settings joins, at a step boundary "
                   "(docs/faults.md, \"Growing a run\"). A multiple of workers_per_process, at most 128 processes' "
                   "workers; slowdown and fault_inject count its ranks; 0: the starting workers (no growth).",
                   process.max_workers, 0),
  };
}

// How often the run logs and evaluates, and when it ends early.
std::vector<ConfigKey> evaluation_keys() {
  return {
      per_process(FAST_INT_KEY("log_every", "A train metrics record every this many steps, per worker.", log_every, 1)),
      FAST_INT_KEY("eval_every",
                   "Evaluate on the test set every this many steps (asynchronous strategies: every this many "
                   "steps of all workers together, divided by the worker count); 0: at each epoch's end.",
                   eval_every, 0),
      text_key(
          "stop_on_divergence", KeyType::boolean, "true or false",
          "End the run early once it diverged (a NaN or infinite loss, or test accuracy at chance while the parameter "
          "norm grows; docs/metrics.md): lockstep strategies at the next evaluation, asynchronous ones at once. "
          "Without it a diverged run is flagged and goes on.",
          [](TrainOptions& o, const std::string& v) { o.stop_on_divergence = parse_bool(v, "stop_on_divergence"); },
          [](const TrainOptions& o) { return std::string(o.stop_on_divergence ? "true" : "false"); }),
      FAST_NUMBER_KEY("target_accuracy",
                      "The summary reports the first time the test accuracy reached this, in [0, 1]; 0: off.",
                      target_accuracy, .at_least(0).at_most(1)),
  };
}

namespace {

// network_latency and network_bandwidth serve allreduce_algorithm = auto's choice only.
std::optional<std::string> fixed_algorithm(const TrainOptions& o) {
  const collective::AllreduceAlgorithm a = o.worker.communicator.allreduce_algorithm;
  if (a == collective::AllreduceAlgorithm::automatic) return std::nullopt;
  return fmt::format("allreduce_algorithm = {}", collective::name_of(a));
}

}  // namespace

// The collectives' algorithm and the network it assumes; dgc's warm-up.
std::vector<ConfigKey> communication_keys() {
  return {
      text_key(
          "allreduce_algorithm", KeyType::string, one_of_text(collective::allreduce_algorithm_names()),
          "all-reduce algorithm of FAST's collectives (allreduce's gradients without a codec, or decoded with "
          "sparse_allreduce = dense: a codec's messages take the codec's own exchange, docs/compression.md; "
          "local-sgd's and easgd's averages, "
          "PowerSGD's factors, the representative model and the run's totals): auto (by message size, workers and "
          "network: docs/collectives.md), ring, recursive-doubling, halving-doubling or tree. Not used where the "
          "runtime's native collectives run (collectives = native).",
          [](TrainOptions& o, const std::string& v) {
            o.worker.communicator.allreduce_algorithm = collective::parse_allreduce_algorithm(v, "allreduce_algorithm");
          },
          [](const TrainOptions& o) {
            return std::string(collective::name_of(o.worker.communicator.allreduce_algorithm));
          }),
      applies_when(
          declared_key(
              FAST_NUMBER_DECLARATION("network_latency",
                                      "seconds per message that allreduce_algorithm = auto assumes (the same on every "
                                      "worker); default: the cluster's under --runtime sim, else 2e-06 (threads on one "
                                      "host), and 2.5e-05 for the two workers of zmq processes with no shared memory "
                                      "between them (docs/collectives.md). Set, it (or network_bandwidth) holds for "
                                      "every group.",
                                      .at_least(0)),
              [](TrainOptions& o, const core::SettingValue& v) {
                o.worker.communicator.latency_seconds = number_of(v);
              },
              [](const TrainOptions& o) {
                return o.worker.communicator.latency_seconds ? text(*o.worker.communicator.latency_seconds)
                                                             : std::string("runtime");
              }),
          fixed_algorithm),
      applies_when(
          declared_key(
              FAST_NUMBER_DECLARATION("network_bandwidth",
                                      "bytes per second between two workers that allreduce_algorithm = auto assumes; "
                                      "default: the cluster's under --runtime sim, else 1.6e+10.",
                                      .greater_than(0)),
              [](TrainOptions& o, const core::SettingValue& v) {
                o.worker.communicator.bandwidth_bytes_per_second = number_of(v);
              },
              [](const TrainOptions& o) {
                return o.worker.communicator.bandwidth_bytes_per_second
                           ? text(*o.worker.communicator.bandwidth_bytes_per_second)
                           : std::string("runtime");
              }),
          fixed_algorithm),
      FAST_NUMBER_KEY("dgc_warmup_epochs",
                      "dgc: sparsity warm-up, epochs over which the density decays exponentially from dgc_warmup_ratio "
                      "to the codec's ratio; 0: none.",
                      dgc_warmup_epochs, .at_least(0)),
  };
}

// The representative model, the buffers and the final evaluation of the replicas.
std::vector<ConfigKey> result_keys() {
  return {
      text_key(
          "final", KeyType::string, one_of_text(kFinalModels),
          "Representative model evaluated and reported: average (of the replicas), rank0, or best (highest test "
          "accuracy).",
          [](TrainOptions& o, const std::string& v) { o.final_model = one_of(v, kFinalModels, "final"); },
          [](const TrainOptions& o) { return o.final_model; }),
      text_key(
          "buffers", KeyType::string, fmt::format("one of: {}", fmt::join(torch::kBufferPolicyNames, ", ")),
          "What the workers do with the model's buffers (BatchNorm's running statistics) after every step: broadcast "
          "(rank 0's, as DistributedDataParallel), average (the mean of floating-point buffers), local (each its "
          "own), or auto: broadcast for synchronous strategies, local for asynchronous ones (the only choice there). "
          "Built-in models have no buffers; TorchScript files may.",
          [](TrainOptions& o, const std::string& v) {
            o.buffers = std::string(torch::buffer_policy_name(torch::parse_buffer_policy(v, "buffers")));
          },
          [](const TrainOptions& o) { return o.buffers; }),
      text_key(
          "replica_accuracy", KeyType::boolean, "true or false",
          "The final evaluation also scores every worker's own replica on the whole test set (the summary's "
          "replica_accuracy_min and _max) when the replicas differ. Each replica costs one pass over the test set, "
          "which dominates large simulated runs; false: the representative model only (min and max are -1). "
          "final = best needs it. On the command line: --no-replica-accuracy.",
          [](TrainOptions& o, const std::string& v) { o.replica_accuracy = parse_bool(v, "replica_accuracy"); },
          [](const TrainOptions& o) { return std::string(o.replica_accuracy ? "true" : "false"); }),
  };
}

// Emulated slow workers, timeouts and the simulation's threads.
std::vector<ConfigKey> emulation_keys() {
  return {
      text_key(
          "slowdown", KeyType::string, "numbers >= 1, comma-separated; or empty",
          "Emulated slow workers: one factor >= 1 per worker, comma-separated (1,1,1,4); worker r waits "
          "(f-1) x its compute time each step. Empty: none.",
          [](TrainOptions& o, const std::string& v) { o.slowdown.factors = parse_factors(v, "slowdown"); },
          [](const TrainOptions& o) { return fmt::format("{}", fmt::join(o.slowdown.factors, ",")); }),
      FAST_NUMBER_KEY("straggler_probability",
                      "Random stragglers: probability, per worker and step, of a slow step, in [0, 1].",
                      slowdown.straggler_probability, .at_least(0).at_most(1)),
      applies_when(
          FAST_NUMBER_KEY("straggler_factor", "Random stragglers: how many times slower a straggling step is (>= 1).",
                          slowdown.straggler_factor, .at_least(1)),
          [](const TrainOptions& o) -> std::optional<std::string> {
            if (o.slowdown.straggler_probability > 0) return std::nullopt;
            return "straggler_probability = 0";
          }),
      per_process(declared_key(
          // At most 1e9 s (31 years), so that it fits the runtimes' clocks.
          FAST_NUMBER_DECLARATION("op_timeout", "Seconds a blocking operation may wait (default: FAST_OP_TIMEOUT).",
                                  .greater_than(0).at_most(1e9)),
          [](TrainOptions& o, const core::SettingValue& v) { o.op_timeout = number_of(v); },
          [](const TrainOptions& o) {
            return o.op_timeout < 0 ? std::string("$FAST_OP_TIMEOUT") : text(o.op_timeout);
          })),
      applies_when(
          per_process(declared_key(
              integer_declaration<int>("sim_threads",
                                       "--runtime sim: OS threads that compute the simulated workers' gradients while "
                                       "the simulation runs; 0: the cores this process may run on. At most one per "
                                       "worker; 1: one after the other on the simulation's thread. The results are "
                                       "the same for any value (docs/simulation.md, \"Parallel computation\").",
                                       0)
                  .at_most(1024),
              [](TrainOptions& o, const core::SettingValue& v) { o.sim_threads = integer_of<int>(v); },
              [](const TrainOptions& o) { return text(static_cast<long long>(o.sim_threads)); })),
          [](const TrainOptions& o) -> std::optional<std::string> {
            if (o.runtime.empty() || runtime::find_runtime(o.runtime).simulated_clock) return std::nullopt;
            return fmt::format("runtime = {}", o.runtime);
          }),
  };
}

}  // namespace

std::vector<ConfigKey> general_keys() {
  std::vector<ConfigKey> keys;
  for (std::vector<ConfigKey> (*group)() :
       {run_keys, model_and_data_keys, optimizer_keys, schedule_keys, output_keys, evaluation_keys, communication_keys,
        result_keys, emulation_keys, process_keys, trust_keys, network_keys}) {
    std::vector<ConfigKey> more = group();
    keys.insert(keys.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  require_accepts(keys);
  return keys;
}
}  // namespace fast::settings::detail
