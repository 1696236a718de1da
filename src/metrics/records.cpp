#include "fast/metrics/records.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include <fmt/format.h>

#include "fast/core/hash.hpp"
#include "fast/core/version.hpp"

namespace fast::metrics {

using nlohmann::json;

json to_json(const StartRecord& r) {
  json out{{"event", "start"},
           {"time", 0.0},
           {"strategy", r.strategy},
           {"runtime", r.runtime},
           {"workers", r.workers},
           {"model", r.model},
           {"parameters", r.parameters},
           {"batch", r.batch},
           {"steps", r.steps},
           {"steps_per_epoch", r.steps_per_epoch},
           {"optimizer", r.optimizer},
           {"lr", r.lr},
           {"seed", r.seed},
           {"param_norm", r.param_norm},
           {"fast_version", core::version()}};
  if (!core::source_commit().empty()) out["fast_commit"] = core::source_commit();
  return out;
}

json to_json(const TrainRecord& r) {
  return {{"event", "train"},
          {"time", r.time},
          {"worker", r.worker},
          {"step", r.step},
          {"epoch", r.epoch},
          {"samples", r.samples},
          {"loss", r.loss},
          {"lr", r.lr},
          {"comm_seconds", r.comm_seconds},
          {"bytes_sent", r.bytes_sent},
          {"skipped_steps", r.skipped_steps},
          {"staleness_mean", r.staleness_mean},
          {"staleness_max", r.staleness_max},
          {"slowdown_seconds", r.slowdown_seconds}};
}

json to_json(const MembershipRecord& r) {
  json record{{"event", "membership"},
              {"time", r.time},
              {"worker", r.worker},
              {"change", r.joined ? "joined" : "lost"},
              {"detail", r.detail}};
  if (r.step >= 0) record["step"] = r.step;
  if (r.workers > 0) record["workers"] = r.workers;
  return record;
}

json to_json(const EvalRecord& r) {
  json record{{"event", "eval"},
              {"time", r.time},
              {"epoch", r.epoch},
              {"step", r.step},
              {"worker", r.worker},
              {"accuracy", r.accuracy},
              {"loss", r.loss},
              {"samples", r.samples},
              {"consensus_distance", r.consensus_distance},
              {"param_norm", r.param_norm}};
  if (r.replica_accuracy_min >= 0) {
    record["replica_accuracy_min"] = r.replica_accuracy_min;
    record["replica_accuracy_max"] = r.replica_accuracy_max;
    record["representative_rank"] = r.representative_rank;
  }
  return record;
}

json end_record(double time, const json& summary) {
  json end{{"event", "end"}, {"time", time}};
  end.update(summary);
  return end;
}

std::filesystem::path process_metrics_path(const std::filesystem::path& metrics, int first_rank, bool whole_world) {
  if (metrics.empty() || whole_world) return metrics;
  // A device, a pipe or the like (/dev/null, /dev/stdout) is every process's own: no file beside it.
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(metrics, ec);
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st) && !std::filesystem::is_directory(st))
    return metrics;
  std::filesystem::path out = metrics;
  out.replace_filename(fmt::format("{}.rank{}{}", metrics.stem().string(), first_rank, metrics.extension().string()));
  return out;
}

std::string run_metrics_stem(const std::filesystem::path& file) {
  const std::string stem = file.stem().string();
  const std::size_t dot = stem.rfind(".rank");
  if (dot == std::string::npos || dot + 5 == stem.size()) return stem;
  const bool digits = std::all_of(stem.begin() + static_cast<std::ptrdiff_t>(dot + 5), stem.end(),
                                  [](unsigned char c) { return std::isdigit(c) != 0; });
  return digits ? stem.substr(0, dot) : stem;
}

std::uint64_t parameter_hash64(std::span<const float> parameters) noexcept {
  return core::xxh3_64(std::as_bytes(parameters));
}

std::string hex64(std::uint64_t value) { return fmt::format("{:016x}", value); }

std::string parameter_hash(std::span<const float> parameters) { return hex64(parameter_hash64(parameters)); }

}  // namespace fast::metrics
