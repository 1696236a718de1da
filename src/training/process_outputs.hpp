#pragma once
// ProcessOutputs: what ONE PROCESS of a training run writes or shows — its metrics file, its live
// display (the progress and evaluation callbacks of train()) and the summary its workers agreed
// on. It is the only object the worker loops of a process share, and it only ever sees the
// workers of this process: nothing in it combines results between workers (that is done with
// collectives, run_totals.hpp), it only serialises their output. Under threads and sim every
// worker is in this process; under zmq each process has its own.
//
// Thread-safety: every method may be called by any worker of this process at any time; one lock
// (its own std::mutex, held only while writing or calling a callback, never across a wait on
// another worker) serialises them.

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "fast/collective/communicator.hpp"
#include "fast/metrics/divergence.hpp"
#include "fast/metrics/jsonl_writer.hpp"
#include "fast/metrics/records.hpp"
#include "fast/training/train_options.hpp"

namespace fast::training {

class ProcessOutputs {
 public:
  ProcessOutputs(ProgressFn progress, EpochFn on_epoch);

  // Opens this process's metrics file (metrics::process_metrics_path) and writes its `start`
  // record, once: the first call does it, later ones (the other workers of the process, which
  // pass the same values) return at once. `hosts_rank0`: whether worker 0 is in this process;
  // only then are the display callbacks called.
  void open(const std::filesystem::path& metrics, int first_rank, bool whole_world, bool hosts_rank0,
            const metrics::StartRecord& start);

  void write(const nlohmann::json& record);
  // The file open() opened (empty before, or without metrics).
  std::filesystem::path metrics_path() const;
  // Shows progress (worker 0's loop calls it; it lives in the process hosting rank 0).
  void progress(const Progress& p);
  // Shows an evaluation, if this process hosts worker 0.
  void evaluation(const EpochReport& e);

  // Shows on the terminal (a warning on stderr, in any process) that a worker of this process saw
  // the run diverge; only the first sign of the process is shown. `stopping`: the run ends early
  // because of it (stop_on_divergence).
  void diverged(const metrics::DivergenceSign& sign, bool stopping);

  // The run's summary, identical on every worker: the first worker to offer it keeps it.
  void offer_summary(const nlohmann::json& summary);
  // The run's summary before the end's closing barrier (RunEndInputs::publish): it replaces an
  // earlier one (the totals gathered again after a loss), and when this process leads and `file`
  // is not empty, it is written there now. A write that fails (IoError) is left to
  // write_summary_file() after the run, which reports it.
  void publish_summary(const std::filesystem::path& file, const nlohmann::json& summary);
  // Writes `summary` to `file` after the run unless `file` is empty, this process does not lead,
  // or publish_summary() has written it already (and nothing replaced it since). Returns whether
  // it wrote; throws core::IoError naming the file when the write fails.
  bool write_summary_file(const std::filesystem::path& file, const nlohmann::json& summary);
  std::optional<nlohmann::json> summary() const;
  // Whether worker 0 is in this process (it writes the summary file); false before open(). After
  // an elastic group changed, whether the group's first member is (set_lead()).
  bool hosts_rank0() const;
  // Whether the group's first member lives in this process from now on (an elastic regrouping
  // lost worker 0, or a process that took rank 0 back joined): the displays and the summary file
  // are the leading process's only.
  void set_lead(bool here);
  // Appends the `end` record (metrics::end_record) to this process's metrics file.
  void write_end(double time, const nlohmann::json& summary);

 private:
  mutable std::mutex mutex_;
  ProgressFn progress_;
  EpochFn on_epoch_;
  bool opened_ = false;
  bool hosts_rank0_ = false;
  std::filesystem::path path_;  // open()'s file
  bool diverged_shown_ = false;
  std::optional<metrics::JsonlWriter> writer_;  // set by open() when there is a metrics file
  std::optional<nlohmann::json> summary_;
  bool summary_file_written_ = false;  // publish_summary() wrote it

  // Writes the summary file if this process leads; the caller holds mutex_.
  void write_summary_locked(const std::filesystem::path& file, const nlohmann::json& summary);
};

// Where a worker's process stands in the world: which ranks share it (a process is known by a
// random token its workers share), its lowest rank, whether it holds every worker, and rank 0.
struct ProcessPlace {
  std::uint64_t token = 0;            // this process's
  std::vector<std::uint64_t> tokens;  // by rank; empty when whole_world (O(1) per worker there)
  int first_rank = 0;                 // lowest rank of this process
  bool whole_world = true;            // every worker is in this process
  bool hosts_rank0 = true;
  // The token of rank's process (0 <= rank < the world's size).
  std::uint64_t token_of(int rank) const { return tokens.empty() ? token : tokens[static_cast<std::size_t>(rank)]; }
};

// The lowest rank of this worker's process: every process holds an equal, contiguous block of
// local_size() ranks (the zmq runtime's placement; the whole world under threads and sim).
int first_rank_of_process(const runtime::Context& ctx);

// Every worker in one process (threads, sim): no communication. Otherwise (zmq, mpi) a collective:
// the workers all-gather their process's token; a worker that joins a run under way, and a group
// that left vacant ranks out, derive the places from the ranks instead (zmq's equal blocks).
ProcessPlace place_process(runtime::Context& ctx, collective::Communicator& comm, std::uint64_t token);

// The lowest-ranked member of the communicator's group in each process, in rank order: the
// workers that build their process's summary (and so read the run's totals).
std::vector<int> summary_builders(const collective::Communicator& comm, const ProcessPlace& place);

}  // namespace fast::training
