#include "config.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "fast/adapters/torch/buffer_policy.hpp"
#include "fast/collective/allreduce_algorithm.hpp"
#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/core/file_status.hpp"
#include "fast/core/parse.hpp"
#include "fast/core/port_range.hpp"
#include "fast/core/spec.hpp"
#include "fast/optim/optimizer.hpp"
#include "fast/optim/schedule.hpp"
#include "fast/runtime/cluster.hpp"
#include "fast/runtime/environment.hpp"
#include "fast/runtime/launcher.hpp"
#include "fast/runtime/registry.hpp"
#include "fast/strategy/registry.hpp"
#include "fast/strategy/strategy.hpp"
#include "fast/training/dataset_spec.hpp"
#include "fast/training/environment.hpp"
#include "fast/training/model_names.hpp"

namespace fast::settings {

namespace {

using training::TrainOptions;

// Text parsing is the strategy options' (fast/strategy/option.hpp), so that every setting reads and
// refuses values alike; integers go through core::parse_int, to the setting's own type (a larger
// value would wrap: 2^32 + 3 workers are not 3). Every check echoes the value as given.
double parse_number(const std::string& text, std::string_view origin) {
  return strategy::parse_number_text(text, origin);
}

// "true" | "false" (a flag given without a value is "true").
bool parse_bool(const std::string& text, std::string_view key) { return strategy::parse_bool_text(text, key); }

// "1,1,1.5,4" -> {1, 1, 1.5, 4}; each a number >= 1. Empty text: no factors.
std::vector<double> parse_factors(const std::string& text, std::string_view key) {
  std::vector<double> factors;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string item(rest.substr(0, comma));
    const double f = parse_number(item, key);
    FAST_ENFORCE(f >= 1.0, "{}: expected factors >= 1, got {} (item {})", key, item, factors.size() + 1);
    factors.push_back(f);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
    FAST_ENFORCE(!rest.empty(), "{}: expected a number after the last ',', got nothing", key);
  }
  return factors;
}

std::string one_of(const std::string& value, const std::vector<std::string>& allowed, std::string_view key) {
  for (const auto& a : allowed)
    if (a == value) return value;
  FAST_THROW(core::InvalidArgument, "{}: unknown value '{}'; expected one of: {}", key, value,
             fmt::join(allowed, ", "));
}

std::string text(double v) { return fmt::format("{}", v); }
std::string text(long long v) { return fmt::format("{}", v); }

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

KeyType key_type(strategy::OptionType type) {
  switch (type) {
    case strategy::OptionType::integer: return KeyType::integer;
    case strategy::OptionType::number: return KeyType::number;
    case strategy::OptionType::boolean: return KeyType::boolean;
    case strategy::OptionType::string:
    case strategy::OptionType::choice: return KeyType::string;
  }
  return KeyType::string;
}

// The key of a declared strategy option: its description names the strategies that read it
// (none: every strategy); its value is parsed, checked and stored by the declaration.
ConfigKey strategy_key(const strategy::DeclaredOption& d) {
  const strategy::StrategyOption& option = d.option;
  std::string description = option.help();
  if (!d.strategies.empty()) description = fmt::format("{}: {}", fmt::join(d.strategies, ", "), description);
  ConfigKey key{option.name(), key_type(option.type()), std::move(description),
                [option](TrainOptions& o, const std::string& v) { option.store(o.worker.strategy, option.parse(v)); },
                [option](const TrainOptions& o) { return option.text(option.load(o.worker.strategy)); }};
  key.strategy_option = true;
  key.accepts = option.expected();
  if (option.type() == strategy::OptionType::integer || option.type() == strategy::OptionType::number)
    key.declaration = option;
  return key;
}

// A general integer or number setting, declared as the strategies declare their options
// (fast/strategy/option.hpp): the declaration's range is the setting's only check, and its
// `accepts`, its error messages ("NAME: expected a number in [0, 1), got 1.50") and the test
// generated from the declarations all come from it. `set` receives a value in range.
ConfigKey declared_key(const core::Setting& declaration,
                       std::function<void(TrainOptions&, const core::SettingValue&)> set,
                       std::function<std::string(const TrainOptions&)> get) {
  ConfigKey key{
      declaration.name(), key_type(declaration.type()), declaration.help(),
      [declaration, set = std::move(set)](TrainOptions& o, const std::string& v) { set(o, declaration.parse(v)); },
      std::move(get)};
  key.accepts = declaration.expected();
  key.declaration = declaration;
  return key;
}

// An integer setting stored in a field of type T: at least `minimum`, and at most T's largest value
// (a larger one would wrap: 2^32 + 3 workers are not 3).
template <typename T>
core::Setting integer_declaration(std::string name, std::string help, long long minimum) {
  core::Setting d = core::Setting::integer(std::move(name), 0, std::move(help));
  d.at_least(static_cast<double>(minimum));
  if (core::max_of<T>() < core::max_of<std::int64_t>()) d.at_most(static_cast<double>(core::max_of<T>()));
  return d;
}

template <typename T>
T integer_of(const core::SettingValue& v) {
  return static_cast<T>(std::get<std::int64_t>(v));
}

double number_of(const core::SettingValue& v) { return std::get<double>(v); }

// The range of a number setting: "RANGE" is a chain of the declaration's range calls.
#define FAST_NUMBER_DECLARATION(NAME, DESC, RANGE) core::Setting::number(NAME, 0, DESC) RANGE

#define FAST_INT_KEY(NAME, DESC, FIELD, MIN)                                                            \
  declared_key(                                                                                         \
      integer_declaration<decltype(TrainOptions{}.FIELD)>(NAME, DESC, MIN),                             \
      [](TrainOptions& o, const core::SettingValue& v) { o.FIELD = integer_of<decltype(o.FIELD)>(v); }, \
      [](const TrainOptions& o) { return text(static_cast<long long>(o.FIELD)); })

#define FAST_NUMBER_KEY(NAME, DESC, FIELD, RANGE)                                   \
  declared_key(                                                                     \
      FAST_NUMBER_DECLARATION(NAME, DESC, RANGE),                                   \
      [](TrainOptions& o, const core::SettingValue& v) { o.FIELD = number_of(v); }, \
      [](const TrainOptions& o) { return text(o.FIELD); })

// The values of the settings that take one of a fixed list (each setter checks against the same list).
const std::vector<std::string> kFinalModels{"average", "rank0", "best"};
const std::vector<std::string> kTransports{"ipc", "tcp"};
const std::vector<std::string> kCollectives{"fast", "native"};
const std::vector<std::string> kWindows{"rma", "service"};

std::string one_of_text(const std::vector<std::string>& allowed, bool empty_too = false) {
  return fmt::format("one of: {}{}", fmt::join(allowed, ", "), empty_too ? "; or empty" : "");
}

// What the string, path and boolean settings accept (docs/config.md's "accepts" column); the
// integer and number settings' comes from their declarations. Every general key has an entry.
std::map<std::string, std::string, std::less<>> text_accepts() {
  return {{"runtime", one_of_text(runtime::runtime_names())},
          {"cluster", "a .toml or .xml file; or empty"},
          {"strategy", one_of_text(strategy::strategy_names())},
          {"model", fmt::format("one of: {}; or a TorchScript file", fmt::join(training::model_names(), ", "))},
          {"device", "cpu, cuda or cuda:K"},
          {"dataset", "a dataset spec (docs/data.md)"},
          {"data_dir", "a folder"},
          {"optimizer", one_of_text(optim::optimizer_names())},
          {"schedule", one_of_text(optim::schedule_names())},
          {"metrics", "a file; or empty"},
          {"summary", "a file; or empty"},
          {"save_model", "a file; or empty"},
          {"checkpoint_dir", "a folder; or empty"},
          {"resume", "a folder; or empty"},
          {"resume_if_present", "true or false"},
          {"elastic", "true or false"},
          {"stop_on_divergence", "true or false"},
          {"allreduce_algorithm", one_of_text(collective::allreduce_algorithm_names())},
          {"final", one_of_text(kFinalModels)},
          {"buffers", fmt::format("one of: {}", fmt::join(torch::kBufferPolicyNames, ", "))},
          {"replica_accuracy", "true or false"},
          {"slowdown", "numbers >= 1, comma-separated; or empty"},
          {"rendezvous", "HOST:PORT"},
          {"key", "a key pair file"},
          {"allow", "an allow-list file"},
          {"insecure", "true or false"},
          {"transport", one_of_text(kTransports, true)},
          {"collectives", one_of_text(kCollectives, true)},
          {"windows", one_of_text(kWindows, true)},
          {"host", "an address; or empty"},
          {"advertise", "an address; or empty"},
          {"ports", "LO-HI, 1 <= LO <= HI <= 65535; or empty"}};
}

// The settings of `fast train` other than the strategies' options, in documentation order.
std::vector<ConfigKey> general_keys() {
  std::vector<ConfigKey> keys{
      {"runtime", KeyType::string, runtime_help(),
       [](TrainOptions& o, const std::string& v) { o.runtime = one_of(v, runtime::runtime_names(), "runtime"); },
       [](const TrainOptions& o) { return o.runtime; }},
      {"cluster", KeyType::path,
       "sim: the simulated cluster, a .toml description or a SimGrid platform .xml (docs/clusters.md); empty: "
       "one 1 Gflop/s host per worker on a 10 Gb/s switch.",
       [](TrainOptions& o, const std::string& v) {
         if (!v.empty()) (void)runtime::load_cluster(v);  // rejects a bad file here, naming it
         o.cluster = v;
       },
       [](const TrainOptions& o) { return o.cluster.string(); }},
      FAST_INT_KEY("workers", "Number of workers.", workers, 1),
      {"strategy", KeyType::string, strategy_help(),
       [](TrainOptions& o, const std::string& v) {
         o.worker.strategy.name = one_of(v, strategy::strategy_names(), "strategy");
       },
       [](const TrainOptions& o) { return o.worker.strategy.name; }},
      {"model", KeyType::string,
       fmt::format(
           "Model: {} (built-in, sized by the dataset's sample shape and classes), a model the program registered "
           "(docs/models.md, \"Adding a model\"), or a TorchScript file (a "
           "path with '/' or ending in .pt, saved with torch.jit.script(m).save(path)). docs/models.md.",
           fmt::join(training::model_names(), ", ")),
       [](TrainOptions& o, const std::string& v) { o.model = v; }, [](const TrainOptions& o) { return o.model; }},
      {"device", KeyType::string,
       "Where each worker computes: cpu; cuda (worker r on GPU r mod the GPUs its process sees); cuda:K (every "
       "worker of the process on GPU K). On a GPU the model, its flat parameter and gradient buffers and the batches "
       "are in device memory, and the strategy works on host copies refreshed each step. Needs FAST built against "
       "a CUDA-enabled libtorch (docs/gpu.md); checked before any data is read.",
       [](TrainOptions& o, const std::string& v) { o.device = v; }, [](const TrainOptions& o) { return o.device; }},
      FAST_NUMBER_KEY("model_flops",
                      "Floating-point operations to train on one sample (forward + backward); 0: "
                      "computed from the model (a TorchScript file: 6 x its parameters). Sets the compute time under "
                      "sim, and elsewhere how often lockstep workers agree on a stop after SIGINT/SIGTERM (every k "
                      "steps of about 2e9 flops, 1 <= k <= 64: docs/faults.md).",
                      model_flops, .at_least(0)),
      {"dataset", KeyType::string,
       fmt::format("Dataset: fashion-mnist (the IDX files of data_dir), npz (arrays x and y), npy or synthetic: {} "
                   "(keys and defaults: Spec strings, dataset). docs/data.md.",
                   training::dataset_family().usages()),
       [](TrainOptions& o, const std::string& v) { o.dataset = v; }, [](const TrainOptions& o) { return o.dataset; }},
      {"data_dir", KeyType::path, "fashion-mnist: folder of the four IDX files, gzip or not (default: FAST_DATA_DIR).",
       [](TrainOptions& o, const std::string& v) { o.data_dir = v; },
       [](const TrainOptions& o) { return o.data_dir.empty() ? std::string("$FAST_DATA_DIR") : o.data_dir.string(); }},
      FAST_INT_KEY("epochs", "Passes over the training set (used when steps = 0).", epochs, 1),
      FAST_INT_KEY("steps", "Steps per worker; 0 means epochs x steps per epoch.", steps, 0),
      FAST_INT_KEY("batch", "Mini-batch size per worker.", batch, 1),
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
      {"optimizer", KeyType::string, "Optimizer: sgd, momentum, nesterov, adam or adamw.",
       [](TrainOptions& o, const std::string& v) {
         o.worker.optimizer.name = one_of(v, optim::optimizer_names(), "optimizer");
         if (!o.lr_given) o.worker.optimizer.lr = training::default_lr(o.worker.optimizer.name);
       },
       [](const TrainOptions& o) { return o.worker.optimizer.name; }},
      FAST_NUMBER_KEY("momentum", "Momentum factor of momentum and nesterov, in [0, 1).", worker.optimizer.momentum,
                      .at_least(0).less_than(1)),
      FAST_NUMBER_KEY("weight_decay", "Weight decay (L2 in the gradient; decoupled for adamw).",
                      worker.optimizer.weight_decay, .at_least(0)),
      FAST_NUMBER_KEY("beta1", "Adam/AdamW first-moment decay.", worker.optimizer.beta1, ),
      FAST_NUMBER_KEY("beta2", "Adam/AdamW second-moment decay.", worker.optimizer.beta2, ),
      FAST_NUMBER_KEY("eps", "Adam/AdamW denominator term.", worker.optimizer.eps, .greater_than(0)),
      {"schedule", KeyType::string, "Learning-rate schedule: constant, step or cosine.",
       [](TrainOptions& o, const std::string& v) {
         o.worker.schedule.name = one_of(v, optim::schedule_names(), "schedule");
       },
       [](const TrainOptions& o) { return o.worker.schedule.name; }},
      FAST_INT_KEY("warmup_steps", "Linear warm-up: over the first N steps the lr is scaled by (step+1)/N (0: none).",
                   worker.schedule.warmup_steps, 0),
      FAST_INT_KEY("step_size", "step schedule: multiply the lr by gamma every step_size steps.",
                   worker.schedule.step_size, 1),
      FAST_NUMBER_KEY("gamma", "step schedule: decay factor.", worker.schedule.gamma, .greater_than(0)),
      FAST_NUMBER_KEY("min_lr_factor", "cosine schedule: final lr as a fraction of the base lr.",
                      worker.schedule.min_lr_factor, .at_least(0)),
      FAST_INT_KEY("seed", "Seed of model initialisation and data order.", seed, 0),
      {"metrics", KeyType::path, "JSONL metrics file (docs/metrics.md); empty: none.",
       [](TrainOptions& o, const std::string& v) { o.metrics = v; },
       [](const TrainOptions& o) { return o.metrics.string(); }},
      {"summary", KeyType::path, "JSON summary file written at the end; empty: none.",
       [](TrainOptions& o, const std::string& v) { o.summary = v; },
       [](const TrainOptions& o) { return o.summary.string(); }},
      {"save_model", KeyType::path,
       "Write the final representative model's flat float32 parameters to this .npy file (numpy.load reads it; "
       "written by the process of its lowest-ranked worker); empty: none.",
       [](TrainOptions& o, const std::string& v) { o.save_model = v; },
       [](const TrainOptions& o) { return o.save_model.string(); }},
      {"checkpoint_dir", KeyType::path,
       "Folder of this run's checkpoints (docs/faults.md): one file per worker and a manifest per checkpoint, "
       "written every checkpoint_every steps, at the end and on SIGINT/SIGTERM; shared by every process of the "
       "run. Every strategy, with every codec and dgc. Empty: none.",
       [](TrainOptions& o, const std::string& v) { o.checkpoint_dir = v; },
       [](const TrainOptions& o) { return o.checkpoint_dir.string(); }},
      FAST_INT_KEY("checkpoint_every",
                   "A checkpoint every this many steps per worker (asynchronous strategies: each worker every this "
                   "many of its own steps, without waiting for the others; not with compress or dgc); 0: only at the "
                   "end and on SIGINT/SIGTERM. Needs checkpoint_dir.",
                   checkpoint_every, 0),
      FAST_INT_KEY("checkpoint_keep", "Complete checkpoints kept in checkpoint_dir; older ones are removed.",
                   checkpoint_keep, 1),
      {"resume", KeyType::path,
       "Continue from the newest complete checkpoint in this folder (an earlier run's checkpoint_dir; the same "
       "workers, model, dataset, batch, seed, strategy and optimizer): parameters, optimizer state, step and data "
       "position. steps and epochs still count from the start of the run. Empty: start anew.",
       [](TrainOptions& o, const std::string& v) { o.resume = v; },
       [](const TrainOptions& o) { return o.resume.string(); }},
      {"resume_if_present", KeyType::boolean,
       "Resume from the newest complete checkpoint in checkpoint_dir when it holds one, else start anew (an empty "
       "or absent folder): the same command for a job's first start and its restarts (fast launch --restart, a "
       "requeued batch job). Needs checkpoint_dir; excludes resume.",
       [](TrainOptions& o, const std::string& v) { o.resume_if_present = parse_bool(v, "resume_if_present"); },
       [](const TrainOptions& o) { return std::string(o.resume_if_present ? "true" : "false"); }},
      {"elastic", KeyType::boolean,
       "Synchronous strategies: when a worker is lost, the survivors agree on a new group at once, take the state "
       "of the one that took the most steps and go on with fewer workers (docs/faults.md, \"Elastic synchronous "
       "training\"); without it a lost worker ends the run. For runtimes that lose workers (zmq, sim) and "
       "strategies that declare it (allreduce, local-sgd and dpsgd without a codec or a robust aggregate).",
       [](TrainOptions& o, const std::string& v) { o.elastic = parse_bool(v, "elastic"); },
       [](const TrainOptions& o) { return std::string(o.elastic ? "true" : "false"); }},
      FAST_INT_KEY("log_every", "A train metrics record every this many steps, per worker.", log_every, 1),
      FAST_INT_KEY("eval_every",
                   "Evaluate on the test set every this many steps (asynchronous strategies: every this many "
                   "steps of all workers together, divided by the worker count); 0: at each epoch's end.",
                   eval_every, 0),
      {"stop_on_divergence", KeyType::boolean,
       "End the run early once it diverged (a NaN or infinite loss, or test accuracy at chance while the parameter "
       "norm grows; docs/metrics.md): lockstep strategies at the next evaluation, asynchronous ones at once. "
       "Without it a diverged run is flagged and goes on.",
       [](TrainOptions& o, const std::string& v) { o.stop_on_divergence = parse_bool(v, "stop_on_divergence"); },
       [](const TrainOptions& o) { return std::string(o.stop_on_divergence ? "true" : "false"); }},
      FAST_NUMBER_KEY("target_accuracy",
                      "The summary reports the first time the test accuracy reached this, in [0, 1]; 0: off.",
                      target_accuracy, .at_least(0).at_most(1)),
      {"allreduce_algorithm", KeyType::string,
       "all-reduce algorithm of FAST's collectives (allreduce's gradients, local-sgd's and easgd's averages, "
       "PowerSGD's factors, the representative model and the run's totals): auto (by message size, workers and "
       "network: docs/collectives.md), ring, recursive-doubling, halving-doubling or tree. Not used where the "
       "runtime's native collectives run (collectives = native).",
       [](TrainOptions& o, const std::string& v) {
         o.worker.communicator.allreduce_algorithm = collective::parse_allreduce_algorithm(v, "allreduce_algorithm");
       },
       [](const TrainOptions& o) {
         return std::string(collective::name_of(o.worker.communicator.allreduce_algorithm));
       }},
      declared_key(
          FAST_NUMBER_DECLARATION("network_latency",
                                  "seconds per message that allreduce_algorithm = auto assumes (the same on every "
                                  "worker); default: the cluster's under --runtime sim, else 2e-06 (threads on one "
                                  "host, docs/collectives.md).",
                                  .at_least(0)),
          [](TrainOptions& o, const core::SettingValue& v) { o.worker.communicator.latency_seconds = number_of(v); },
          [](const TrainOptions& o) {
            return o.worker.communicator.latency_seconds ? text(*o.worker.communicator.latency_seconds)
                                                         : std::string("runtime");
          }),
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
      FAST_NUMBER_KEY("dgc_warmup_epochs",
                      "dgc: sparsity warm-up, epochs over which the density decays exponentially from dgc_warmup_ratio "
                      "to the codec's ratio; 0: none.",
                      dgc_warmup_epochs, .at_least(0)),
      {"final", KeyType::string,
       "Representative model evaluated and reported: average (of the replicas), rank0, or best (highest test "
       "accuracy).",
       [](TrainOptions& o, const std::string& v) { o.final_model = one_of(v, kFinalModels, "final"); },
       [](const TrainOptions& o) { return o.final_model; }},
      {"buffers", KeyType::string,
       "What the workers do with the model's buffers (BatchNorm's running statistics) after every step: broadcast "
       "(rank 0's, as DistributedDataParallel), average (the mean of floating-point buffers), local (each its "
       "own), or auto: broadcast for synchronous strategies, local for asynchronous ones (the only choice there). "
       "Built-in models have no buffers; TorchScript files may.",
       [](TrainOptions& o, const std::string& v) {
         o.buffers = std::string(torch::buffer_policy_name(torch::parse_buffer_policy(v, "buffers")));
       },
       [](const TrainOptions& o) { return o.buffers; }},
      {"replica_accuracy", KeyType::boolean,
       "The final evaluation also scores every worker's own replica on the whole test set (the summary's "
       "replica_accuracy_min and _max) when the replicas differ. Each replica costs one pass over the test set, "
       "which dominates large simulated runs; false: the representative model only (min and max are -1). "
       "final = best needs it. On the command line: --no-replica-accuracy.",
       [](TrainOptions& o, const std::string& v) { o.replica_accuracy = parse_bool(v, "replica_accuracy"); },
       [](const TrainOptions& o) { return std::string(o.replica_accuracy ? "true" : "false"); }},
      {"slowdown", KeyType::string,
       "Emulated slow workers: one factor >= 1 per worker, comma-separated (1,1,1,4); worker r waits "
       "(f-1) x its compute time each step. Empty: none.",
       [](TrainOptions& o, const std::string& v) { o.slowdown.factors = parse_factors(v, "slowdown"); },
       [](const TrainOptions& o) { return fmt::format("{}", fmt::join(o.slowdown.factors, ",")); }},
      FAST_NUMBER_KEY("straggler_probability",
                      "Random stragglers: probability, per worker and step, of a slow step, in [0, 1].",
                      slowdown.straggler_probability, .at_least(0).at_most(1)),
      FAST_NUMBER_KEY("straggler_factor", "Random stragglers: how many times slower a straggling step is (>= 1).",
                      slowdown.straggler_factor, .at_least(1)),
      declared_key(
          // At most 1e9 s (31 years), so that it fits the runtimes' clocks.
          FAST_NUMBER_DECLARATION("op_timeout", "Seconds a blocking operation may wait (default: FAST_OP_TIMEOUT).",
                                  .greater_than(0).at_most(1e9)),
          [](TrainOptions& o, const core::SettingValue& v) { o.op_timeout = number_of(v); },
          [](const TrainOptions& o) {
            return o.op_timeout < 0 ? std::string("$FAST_OP_TIMEOUT") : text(o.op_timeout);
          }),
      declared_key(
          integer_declaration<int>("sim_threads",
                                   "--runtime sim: OS threads that compute the simulated workers' gradients while "
                                   "the simulation runs; 0: the cores this process may run on. At most one per "
                                   "worker; 1: one after the other on the simulation's thread. The results are "
                                   "the same for any value (docs/simulation.md, \"Parallel computation\").",
                                   0)
              .at_most(1024),
          [](TrainOptions& o, const core::SettingValue& v) { o.sim_threads = integer_of<int>(v); },
          [](const TrainOptions& o) { return text(static_cast<long long>(o.sim_threads)); }),
      // zmq: how the processes of a multi-process run find and trust each other (runtime::ProcessOptions,
      // docs/launch.md). Left at their defaults, the runtime reads the FAST_* variable each names.
      {"rendezvous", KeyType::string,
       "--runtime zmq: HOST:PORT of the rendezvous that assigns ranks and exchanges addresses and keys "
       "(default: FAST_RENDEZVOUS).",
       [](TrainOptions& o, const std::string& v) { o.process.rendezvous = v; },
       [](const TrainOptions& o) {
         return o.process.rendezvous.empty() ? std::string("$FAST_RENDEZVOUS") : o.process.rendezvous;
       }},
      declared_key(
          integer_declaration<int>(
              "world_size", "--runtime zmq: number of processes in the run, >= 1 (default: FAST_WORLD_SIZE).", 1),
          [](TrainOptions& o, const core::SettingValue& v) { o.process.world_size = integer_of<int>(v); },
          [](const TrainOptions& o) {
            return o.process.world_size <= 0 ? std::string("$FAST_WORLD_SIZE")
                                             : text(static_cast<long long>(o.process.world_size));
          }),
      declared_key(
          integer_declaration<int>("process_rank",
                                   "--runtime zmq: this process's index in [0, world_size); unset: the rendezvous "
                                   "assigns one in arrival order (default: FAST_PROCESS_RANK).",
                                   0),
          [](TrainOptions& o, const core::SettingValue& v) { o.process.process_rank = integer_of<int>(v); },
          [](const TrainOptions& o) {
            return o.process.process_rank < 0 ? std::string("$FAST_PROCESS_RANK")
                                              : text(static_cast<long long>(o.process.process_rank));
          }),
      FAST_INT_KEY("workers_per_process",
                   "--runtime zmq: workers in each process (threads of it); the world has "
                   "world_size x this workers.",
                   process.workers_per_process, 1),
      {"key", KeyType::path,
       "--runtime zmq: this process's CURVE key pair, from `fast keygen` (default: FAST_KEY_FILE).",
       [](TrainOptions& o, const std::string& v) { o.process.key_file = v; },
       [](const TrainOptions& o) {
         return o.process.key_file.empty() ? std::string("$FAST_KEY_FILE") : o.process.key_file.string();
       }},
      {"allow", KeyType::path,
       "--runtime zmq: the public keys admitted to the run, one per line (default: FAST_ALLOW_FILE).",
       [](TrainOptions& o, const std::string& v) { o.process.allow_file = v; },
       [](const TrainOptions& o) {
         return o.process.allow_file.empty() ? std::string("$FAST_ALLOW_FILE") : o.process.allow_file.string();
       }},
      {"insecure", KeyType::boolean,
       "--runtime zmq: no authentication and no encryption between processes; warns (default: FAST_INSECURE=1). "
       "A flag: --insecure.",
       [](TrainOptions& o, const std::string& v) { o.process.insecure = parse_bool(v, "insecure"); },
       [](const TrainOptions& o) { return std::string(o.process.insecure ? "true" : "false"); }},
      declared_key(
          FAST_NUMBER_DECLARATION(
              "peer_timeout",
              "--runtime zmq: seconds of silence after which a peer is lost (default: FAST_PEER_TIMEOUT).",
              .greater_than(0)),
          [](TrainOptions& o, const core::SettingValue& v) { o.process.peer_timeout_seconds = number_of(v); },
          [](const TrainOptions& o) {
            return o.process.peer_timeout_seconds < 0 ? std::string("$FAST_PEER_TIMEOUT")
                                                      : text(o.process.peer_timeout_seconds);
          }),
      declared_key(
          FAST_NUMBER_DECLARATION("rendezvous_timeout",
                                  "--runtime zmq: seconds to wait for every process at the rendezvous (default: "
                                  "FAST_RENDEZVOUS_TIMEOUT).",
                                  .greater_than(0)),
          [](TrainOptions& o, const core::SettingValue& v) { o.process.rendezvous_timeout_seconds = number_of(v); },
          [](const TrainOptions& o) {
            return o.process.rendezvous_timeout_seconds < 0 ? std::string("$FAST_RENDEZVOUS_TIMEOUT")
                                                            : text(o.process.rendezvous_timeout_seconds);
          }),
      {"transport", KeyType::string,
       "--runtime zmq: tcp or ipc (processes of one host only); empty: tcp "
       "(default: FAST_TRANSPORT).",
       [](TrainOptions& o, const std::string& v) {
         o.process.transport = v.empty() ? v : one_of(v, kTransports, "transport");
       },
       [](const TrainOptions& o) {
         return o.process.transport.empty() ? std::string("$FAST_TRANSPORT") : o.process.transport;
       }},
      {"collectives", KeyType::string,
       "fast (FAST's ring all-reduce, broadcast, all-gather and barrier over point-to-point messages) or native "
       "(the runtime's own: MPI_Allreduce and co. under --runtime mpi); empty: native under mpi, fast elsewhere "
       "(default: FAST_COLLECTIVES). The two give the same results up to the order of floating-point additions.",
       [](TrainOptions& o, const std::string& v) {
         o.collectives = v.empty() ? v : one_of(v, kCollectives, "collectives");
       },
       [](const TrainOptions& o) { return o.collectives.empty() ? std::string("$FAST_COLLECTIVES") : o.collectives; }},
      {"windows", KeyType::string,
       "where the one-sided windows of ps, easgd, adpsgd, gosgd and acid run: rma (MPI RMA under --runtime mpi: the "
       "requester applies each operation under the owner's lock, the owner takes no part) or service (the owner's "
       "service activity answers requests over messages, every runtime); empty: rma under mpi, service elsewhere "
       "(default: FAST_WINDOWS). Windows with a codec (compress) always use the service.",
       [](TrainOptions& o, const std::string& v) { o.windows = v.empty() ? v : one_of(v, kWindows, "windows"); },
       [](const TrainOptions& o) { return o.windows.empty() ? std::string("$FAST_WINDOWS") : o.windows; }},
      {"host", KeyType::string,
       "--runtime zmq: the address this process binds and is reached at over tcp; empty: the address that reaches "
       "the rendezvous (default: FAST_HOST).",
       [](TrainOptions& o, const std::string& v) { o.process.host = v; },
       [](const TrainOptions& o) { return o.process.host.empty() ? std::string("$FAST_HOST") : o.process.host; }},
      {"advertise", KeyType::string,
       "--runtime zmq: the address the other processes reach this one at, when it differs from the one bound "
       "(NAT, containers); empty: the address bound (default: FAST_ADVERTISE).",
       [](TrainOptions& o, const std::string& v) { o.process.advertise = v; },
       [](const TrainOptions& o) {
         return o.process.advertise.empty() ? std::string("$FAST_ADVERTISE") : o.process.advertise;
       }},
      {"ports", KeyType::string,
       "--runtime zmq: LO-HI, the range every listening port of this process lies in (data, heartbeats, "
       "streams), for a firewall; empty: any (default: FAST_PORTS).",
       [](TrainOptions& o, const std::string& v) { o.process.ports = core::parse_port_range(v, "ports").text(); },
       [](const TrainOptions& o) { return o.process.ports.empty() ? std::string("$FAST_PORTS") : o.process.ports; }},
  };
  const auto accepts = text_accepts();
  for (ConfigKey& k : keys) {
    if (!k.accepts.empty()) continue;
    const auto it = accepts.find(k.name);
    FAST_ENFORCE_AS(core::InvalidUsage, it != accepts.end(), "setting '{}' has no 'accepts' text", k.name);
    k.accepts = it->second;
  }
  return keys;
}
#undef FAST_INT_KEY
#undef FAST_NUMBER_KEY
#undef FAST_NUMBER_DECLARATION

// The general keys, then every declared strategy option; InvalidArgument when a strategy declared
// an option under the name of a general key.
std::vector<ConfigKey> build_keys() {
  std::vector<ConfigKey> keys = general_keys();
  const std::size_t general = keys.size();
  for (const strategy::DeclaredOption& d : strategy::declared_options()) {
    for (std::size_t i = 0; i < general; ++i)
      FAST_ENFORCE(keys[i].name != d.option.name(),
                   "strategy option '{}' (declared by {}) has the name of a fast train setting; rename the option",
                   d.option.name(), d.strategies.empty() ? std::string("the common options") : d.strategies.front());
    keys.push_back(strategy_key(d));
  }
  return keys;
}

}  // namespace

// Keys are spelled with '_' in files; '-' is accepted too (and is the flags' spelling).
const ConfigKey* find_config_key(std::string_view name) {
  std::string normal(name);
  std::replace(normal.begin(), normal.end(), '-', '_');
  for (const ConfigKey& k : config_keys())
    if (k.name == normal) return &k;
  return nullptr;
}

namespace {

const ConfigKey* find_key(std::string_view name) { return find_config_key(name); }

std::vector<std::string> key_names() {
  std::vector<std::string> names;
  for (const ConfigKey& k : config_keys()) names.emplace_back(k.name);
  return names;
}

std::string_view toml_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    default: return "a date or time";
  }
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
  // Rebuilt when a strategy was registered since; earlier lists stay alive (they are referenced).
  static std::mutex mutex;
  static std::deque<std::vector<ConfigKey>> lists;
  static std::uint64_t generation = 0;
  const std::lock_guard lock(mutex);
  const std::uint64_t now = strategy::registry_generation();
  if (lists.empty() || now != generation) {
    lists.push_back(build_keys());
    generation = now;
  }
  return lists.back();
}

std::string flag_name(std::string_view key) {
  std::string flag = "--" + std::string(key);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

std::string_view key_type_name(KeyType type) {
  switch (type) {
    case KeyType::string: return "string";
    case KeyType::integer: return "integer";
    case KeyType::number: return "number";
    case KeyType::path: return "path";
    case KeyType::boolean: return "boolean";
  }
  return "?";
}

void apply_setting(TrainOptions& options, std::string_view key, const std::string& value, std::string_view origin) {
  const ConfigKey* k = find_key(key);
  FAST_ENFORCE(k != nullptr, "{}: unknown setting '{}'; expected one of: {}", origin, key,
               fmt::join(key_names(), ", "));
  try {
    k->set(options, value);
  } catch (const core::InvalidArgument& e) {
    // The setters' messages start with the key; the origin (flag or file position) replaces it.
    std::string_view message = e.what();
    const std::string prefix = std::string(k->name) + ": ";
    if (message.substr(0, prefix.size()) == prefix) message.remove_prefix(prefix.size());
    FAST_THROW(core::InvalidArgument, "{}: {}", origin, message);
  }
}

toml::table parse_toml_file(const std::filesystem::path& file) {
  const std::filesystem::file_status status = core::file_status_of(file, "config file");
  FAST_ENFORCE_AS(core::IoError, std::filesystem::exists(status), "config file '{}' does not exist", file.string());
  // A folder would read as an empty file (a run with every default).
  FAST_ENFORCE(!std::filesystem::is_directory(status), "config file '{}' is a folder; expected a TOML file",
               file.string());
  try {
    return toml::parse_file(file.string());
  } catch (const toml::parse_error& e) {
    FAST_THROW(core::InvalidArgument, "config file '{}' line {} column {}: {}", file.string(), e.source().begin.line,
               e.source().begin.column, e.description());
  }
}

std::string config_value_text(std::string_view key, const toml::node& node, const std::string& where) {
  const ConfigKey* k = find_key(key);
  FAST_ENFORCE(k != nullptr, "{}: unknown key '{}'; expected one of: {}", where, key, fmt::join(key_names(), ", "));
  std::string value;
  bool ok = false;
  switch (k->type) {
    case KeyType::string:
    case KeyType::path:
      if (auto s = node.value_exact<std::string>()) value = *s, ok = true;
      break;
    case KeyType::integer:
      if (auto i = node.value_exact<int64_t>()) value = fmt::format("{}", *i), ok = true;
      break;
    case KeyType::number:
      if (node.is_integer() || node.is_floating_point()) value = fmt::format("{}", *node.value<double>()), ok = true;
      break;
    case KeyType::boolean:
      if (auto b = node.value_exact<bool>()) value = *b ? "true" : "false", ok = true;
      break;
  }
  FAST_ENFORCE(ok, "{}: key '{}' expects {}, got {}", where, key, key_type_name(k->type), toml_type_name(node));
  return value;
}

void apply_config_value(TrainOptions& options, std::string_view key, const toml::node& node, const std::string& where) {
  apply_setting(options, key, config_value_text(key, node, where), fmt::format("{}: key '{}'", where, key));
}

void apply_config_table(TrainOptions& options, const toml::table& table, const std::filesystem::path& file) {
  for (const auto& [name, node] : table)
    apply_config_value(options, name.str(), node,
                       fmt::format("config file '{}' line {}", file.string(), node.source().begin.line));
}

void apply_config_file(TrainOptions& options, const std::filesystem::path& file) {
  apply_config_table(options, parse_toml_file(file), file);
}

namespace {

std::string default_text(const ConfigKey& k, const TrainOptions& defaults) {
  const std::string def = k.get(defaults);
  return def.empty() ? "\"\"" : def;
}

}  // namespace

std::vector<core::EnvTable> environment_tables() {
  std::vector<core::EnvTable> tables{core::env_table(), runtime::runtime_environment()};
  for (const runtime::RuntimeBackend& b : runtime::runtime_backends())
    if (!b.environment.empty()) tables.push_back(b.environment);
  tables.push_back(training::training_environment());
  return tables;
}

std::string config_markdown() {
  const TrainOptions defaults;
  std::string md =
      "| key | flag | type | default | accepts | description |\n"
      "| --- | --- | --- | --- | --- | --- |\n";
  for (const ConfigKey& k : config_keys())
    if (!k.strategy_option)
      md += fmt::format("| `{}` | `{}` | {} | `{}` | {} | {} |\n", k.name, flag_name(k.name), key_type_name(k.type),
                        default_text(k, defaults), markdown_cell(k.accepts), markdown_cell(k.description));
  md +=
      "\n### Strategy options\n\nDeclared by the strategies in their registry entries "
      "(docs/architecture.md, \"Adding a strategy\"); the description starts with the strategies that read the "
      "option (none: every strategy). Setting an option the chosen strategy does not read changes nothing.\n\n"
      "| key | flag | type | default | accepts | description |\n"
      "| --- | --- | --- | --- | --- | --- |\n";
  for (const ConfigKey& k : config_keys())
    if (k.strategy_option)
      md += fmt::format("| `{}` | `{}` | {} | `{}` | {} | {} |\n", k.name, flag_name(k.name), key_type_name(k.type),
                        default_text(k, defaults), markdown_cell(k.accepts), markdown_cell(k.description));
  md += spec_markdown();
  md += "\n### Environment variables\n\n| variable | type | default | description |\n| --- | --- | --- | --- |\n";
  for (const core::EnvTable table : environment_tables())
    for (const core::EnvVar& v : table)
      md += fmt::format("| `{}` | {} | `{}` | {} |\n", v.name,
                        v.type == core::EnvType::integer ? fmt::format("integer, {} to {}", v.min, v.max)
                                                         : std::string(core::env_type_name(v.type)),
                        v.default_value, v.description);
  return md;
}

}  // namespace fast::settings
