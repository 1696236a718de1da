#include "fast/training/run_identity.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/metrics/records.hpp"
#include "fast/runtime/registry.hpp"
#include "fast/strategy/registry.hpp"

namespace fast::training {

namespace {

// 64-bit FNV-1a of the bytes of `text`.
std::uint64_t fnv1a64_text(std::string_view text) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

int workers_before_launch(const TrainOptions& o) {
  if (!runtime::find_runtime(o.runtime).multi_process) return o.workers;
  if (o.process.max_workers > 0) return o.process.max_workers;  // a run that may grow: its every rank
  // Processes: as given or detected from the launcher (runtime/detect.hpp); else only the runtime
  // knows (MPI_COMM_WORLD's size once MPI is initialised).
  return o.process.world_size > 0 ? o.process.world_size * o.process.workers_per_process : 0;
}

nlohmann::json settings_identity(const TrainOptions& o, int workers) {
  const strategy::StrategyOptions& s = o.worker.strategy;
  nlohmann::json identity{{"format", kRunIdentityFormat},
                          {"model", o.model},
                          {"dataset", o.dataset},
                          {"batch", o.batch},
                          {"seed", o.seed},
                          {"strategy", s.name},
                          {"optimizer", o.worker.optimizer.name},
                          {"dgc_warmup_epochs", o.dgc_warmup_epochs}};
  if (workers > 0) identity["workers"] = workers;
  for (const strategy::DeclaredOption& d : strategy::declared_options()) {
    if (!d.read_by(s.name)) continue;
    const std::string& key = d.option.name();
    FAST_ENFORCE(!identity.contains(key), "run identity: the strategy option '{}' has the name of another field", key);
    identity[key] = d.option.text(d.option.load(s));
  }
  return identity;
}

void add_model_fields(nlohmann::json& identity, std::uint64_t parameters, std::span<const core::TensorBlock> layout,
                      std::int64_t train_samples) {
  std::string text;
  for (const core::TensorBlock& b : layout)
    text += fmt::format("{}[{}]@{};", b.name, fmt::join(b.shape, ","), b.offset);
  identity["parameters"] = parameters;
  identity["layout"] = metrics::hex64(fnv1a64_text(text));
  identity["train_samples"] = train_samples;
}

nlohmann::json with_fingerprint(nlohmann::json identity) {
  identity.erase("fingerprint");
  identity["fingerprint"] = metrics::hex64(fnv1a64_text(identity.dump()));
  return identity;
}

std::string identity_mismatch(const nlohmann::json& saved, const nlohmann::json& expected, std::string_view file) {
  if (!saved.is_object())
    return fmt::format("'{}' carries no run identity (written by an older FAST, or not by `fast train`)", file);
  const nlohmann::json none;
  auto differs = [&](const std::string& key) {
    const nlohmann::json& was = saved.contains(key) ? saved[key] : none;
    return was == expected[key] ? std::string()
                                : fmt::format("'{}' was written by a run with {} = {}; this run has {} = {}", file, key,
                                              was.dump(), key, expected[key].dump());
  };
  // The settings a user chooses first, so that a run of another model is named by its model, not
  // by the parameter count that follows from it; then every field by name.
  for (const char* key : {"format", "workers", "model", "dataset", "seed", "batch", "strategy", "optimizer"})
    if (expected.contains(key))
      if (std::string why = differs(key); !why.empty()) return why;
  for (const auto& [key, value] : expected.items())
    if (key != "fingerprint")
      if (std::string why = differs(key); !why.empty()) return why;
  if (expected.contains("fingerprint") && saved.value("fingerprint", none) != expected["fingerprint"])
    return fmt::format(
        "'{}' has the run fingerprint {}; this run's is {} (the file was edited, or written by another "
        "FAST)",
        file, saved.value("fingerprint", none).dump(), expected["fingerprint"].dump());
  return "";
}

}  // namespace fast::training
