#include "process_outputs.hpp"

#include <algorithm>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/metrics/jsonl_writer.hpp"
#include "fast/training/run_identity.hpp"

namespace fast::training {

ProcessOutputs::ProcessOutputs(ProgressFn progress, EpochFn on_epoch)
    : progress_(std::move(progress)), on_epoch_(std::move(on_epoch)) {}

void ProcessOutputs::open(const std::filesystem::path& metrics, int first_rank, bool whole_world, bool hosts_rank0,
                          const metrics::StartRecord& start) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (opened_) return;
  opened_ = true;
  hosts_rank0_ = hosts_rank0;
  const std::filesystem::path path = metrics::process_metrics_path(metrics, first_rank, whole_world);
  if (path.empty()) return;
  path_ = path;
  writer_.emplace(path);
  writer_->write(metrics::to_json(start));
}

std::filesystem::path ProcessOutputs::metrics_path() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return path_;
}

void ProcessOutputs::write(const nlohmann::json& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (writer_) writer_->write(record);
}

void ProcessOutputs::progress(const Progress& p) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (progress_ && hosts_rank0_) progress_(p);
}

void ProcessOutputs::evaluation(const EpochReport& e) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (on_epoch_ && hosts_rank0_) on_epoch_(e);
}

void ProcessOutputs::diverged(const metrics::DivergenceSign& sign, bool stopping) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (diverged_shown_) return;
  diverged_shown_ = true;
  core::log(core::LogLevel::warn, "training diverged: {} (the summary marks the run 'diverged'{})", sign.describe(),
            stopping ? "; stopping (stop_on_divergence)" : "; --stop-on-divergence ends such a run early");
}

void ProcessOutputs::offer_summary(const nlohmann::json& summary) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!summary_) summary_ = summary;
}

void ProcessOutputs::write_summary_locked(const std::filesystem::path& file, const nlohmann::json& summary) {
  metrics::write_json_file(file, with_fingerprint(summary));  // a hash of its content: edits show
  summary_file_written_ = true;
}

void ProcessOutputs::publish_summary(const std::filesystem::path& file, const nlohmann::json& summary) {
  std::lock_guard<std::mutex> lock(mutex_);
  summary_ = summary;
  summary_file_written_ = false;
  if (file.empty() || !hosts_rank0_) return;
  try {
    write_summary_locked(file, summary);
  } catch (const core::IoError& e) {
    core::log(core::LogLevel::debug, "summary: not written before the end's barrier ({}); tried again at the end",
              e.what());
  }
}

bool ProcessOutputs::write_summary_file(const std::filesystem::path& file, const nlohmann::json& summary) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file.empty() || !hosts_rank0_ || summary_file_written_) return false;
  write_summary_locked(file, summary);
  return true;
}

std::optional<nlohmann::json> ProcessOutputs::summary() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return summary_;
}

bool ProcessOutputs::hosts_rank0() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hosts_rank0_;
}

void ProcessOutputs::set_lead(bool here) {
  std::lock_guard<std::mutex> lock(mutex_);
  hosts_rank0_ = here;
}

void ProcessOutputs::write_end(double time, const nlohmann::json& summary) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (writer_) writer_->write(metrics::end_record(time, summary));
}

int first_rank_of_process(const runtime::Context& ctx) {
  const int local = std::max(1, ctx.local_size());
  return ctx.rank() - ctx.rank() % local;
}

ProcessPlace place_process(runtime::Context& ctx, collective::Communicator& comm, std::uint64_t token) {
  ProcessPlace place;
  place.token = token;
  if (ctx.local_size() == ctx.size()) return place;
  place.whole_world = false;
  place.tokens.assign(static_cast<std::size_t>(ctx.size()), token);
  const std::uint64_t mine = token;
  if (comm.joining() || comm.group_size() < ctx.size()) {
    // A process that took a lost rank back runs no set-up collective, nor does a group that left
    // vacant ranks out (a run that may grow): the zmq runtime gives each process an equal,
    // contiguous block of ranks, so the others' places follow from the ranks.
    comm.skip_collective();
    const int local = ctx.local_size();
    const int first = first_rank_of_process(ctx);
    for (int w = 0; w < ctx.size(); ++w)
      place.tokens[static_cast<std::size_t>(w)] =
          (w >= first && w < first + local) ? token : static_cast<std::uint64_t>(w / local) ^ ~token;
    place.first_rank = first;
    place.hosts_rank0 = first == 0;
    return place;
  }
  comm.allgather(core::ConstView(&mine, 1, core::DType::i64),
                 core::MutableView(place.tokens.data(), place.tokens.size(), core::DType::i64));
  place.first_rank =
      static_cast<int>(std::find(place.tokens.begin(), place.tokens.end(), token) - place.tokens.begin());
  place.hosts_rank0 = place.tokens[0] == token;
  return place;
}

std::vector<int> summary_builders(const collective::Communicator& comm, const ProcessPlace& place) {
  std::vector<int> builders;
  std::vector<std::uint64_t> seen;
  for (int m : comm.members()) {
    const std::uint64_t token = place.token_of(m);
    if (std::find(seen.begin(), seen.end(), token) != seen.end()) continue;
    seen.push_back(token);
    builders.push_back(m);
  }
  return builders;
}

}  // namespace fast::training
