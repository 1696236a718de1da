#pragma once
// The metrics records of a training run (docs/metrics.md): one struct per record kind, with the
// meaning of each field, and the function that turns it into the JSON object written as one line
// of the metrics file. Every runtime writes the same records; training loops fill the structs and
// never spell a field name themselves.
//
// Also here: which file a process writes its records to (process_metrics_path) and the hash that
// identifies a model's parameters bit for bit (parameter_hash).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

namespace fast::metrics {

// `start`: once per metrics file, before training.
struct StartRecord {
  std::string strategy;              // coordination strategy
  std::string runtime;               // runtime name
  int workers = 0;                   // workers in the world
  std::string model;                 // model name
  std::uint64_t parameters = 0;      // length of the flat parameter vector
  std::int64_t batch = 0;            // mini-batch per worker
  std::int64_t steps = 0;            // steps per worker the run will take
  std::int64_t steps_per_epoch = 0;  // floor(training samples / (workers x batch))
  std::string optimizer;
  double lr = 0;
  std::uint64_t seed = 0;
  double param_norm = 0;  // L2 norm of the initial model (the divergence check's reference)
};

// `train`: one worker's state after `step` steps (every log_every steps, and at its last step).
struct TrainRecord {
  double time = 0;                 // seconds since training started, runtime clock
  int worker = 0;                  // rank
  std::int64_t step = 0;           // steps this worker has taken
  std::int64_t epoch = 0;          // 0-based epoch of the last step
  std::int64_t samples = 0;        // training samples this worker has processed
  double loss = 0;                 // mean mini-batch loss since its previous train record
  double lr = 0;                   // learning rate of the last step
  double comm_seconds = 0;         // cumulative time in the strategy's exchanges
  std::uint64_t bytes_sent = 0;    // cumulative payload bytes sent to all peers
  std::int64_t skipped_steps = 0;  // cumulative skipped updates (non-finite gradient)
  double staleness_mean = 0;       // version lag of the gradients applied so far
  std::uint64_t staleness_max = 0;
  double slowdown_seconds = 0;  // cumulative emulated slowness
};

// `eval`: one evaluation of the representative model on the test set.
struct EvalRecord {
  double time = 0;                // when the evaluated model was taken, seconds since training started
  double epoch = 0;               // epochs of training done (fractional)
  std::int64_t step = 0;          // steps per worker (asynchronous: steps of all workers / workers)
  int worker = 0;                 // the worker that wrote the record
  double accuracy = 0;            // test accuracy in [0, 1]
  double loss = 0;                // mean test cross-entropy
  std::int64_t samples = 0;       // test samples scored
  double consensus_distance = 0;  // (1/W) sum_i ||x_i - xbar||^2
  // Only when the replicas were each scored (replica_accuracy_min >= 0 in the evaluator's result):
  double replica_accuracy_min = -1;
  double replica_accuracy_max = -1;
  int representative_rank = -1;  // the replica used as the representative; -1: the average
  double param_norm = 0;         // L2 norm of the evaluated (representative) model
};

// `membership`: a worker lost, or a new process that took a lost worker's rank back (zmq
// rejoin), as worker 0's process saw it.
struct MembershipRecord {
  double time = 0;      // seconds since training started, runtime clock of worker 0
  int worker = 0;       // the rank lost or taken back
  bool joined = false;  // "change": "joined" when true, else "lost"
  std::string detail;   // where it ran and why
  // Elastic synchronous runs: the steps the survivors go on from and their number (-1 and 0: not
  // written, as in asynchronous runs).
  std::int64_t step = -1;
  int workers = 0;
};

nlohmann::json to_json(const StartRecord& r);       // {"event": "start", "time": 0, ...}
nlohmann::json to_json(const MembershipRecord& r);  // {"event": "membership", "change": "lost" | "joined", ...}
nlohmann::json to_json(const TrainRecord& r);       // {"event": "train", ...}
nlohmann::json to_json(const EvalRecord& r);        // {"event": "eval", ...}; replica fields only when measured
// `end`: the summary (docs/metrics.md, "Summary") with "event": "end" and `time` first.
nlohmann::json end_record(double time, const nlohmann::json& summary);

// The file a process writes its workers' records to, for the `--metrics` path `metrics`:
//   every worker of the world in this process (local_size == world size): `metrics` itself;
//   otherwise `<stem>.rank<R><ext>` beside it, R = first_rank, the lowest rank of this process
//   ("out/m.jsonl" -> "out/m.rank4.jsonl"), so every process may be given the same path.
// An empty `metrics` (no file) stays empty, and so does a path that exists and is neither a regular
// file nor a folder (/dev/null, /dev/stdout, a named pipe): each process writes to it as given.
std::filesystem::path process_metrics_path(const std::filesystem::path& metrics, int first_rank, bool whole_world);
// The inverse's stem: the stem of the `--metrics` path a process's file was named after
// ("m.rank4.jsonl" -> "m", "m.jsonl" -> "m"), so that the files of one run share it.
std::string run_metrics_stem(const std::filesystem::path& file);

// XXH3-64 (seed 0, core/hash.hpp) of the bytes of the parameters as stored in memory (IEEE-754
// binary32, this machine's byte order: little-endian on every supported platform); parameter_hash
// writes it as 16 lower-case hex digits. Equal hashes mean bit-identical models. XXH3 reads memory
// at tens of GB/s, so that hashing every simulated worker's replica at the end costs little.
std::uint64_t parameter_hash64(std::span<const float> parameters) noexcept;
std::string parameter_hash(std::span<const float> parameters);
std::string hex64(std::uint64_t value);

}  // namespace fast::metrics
