#include "fast/compress/dgc.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "fast/core/error.hpp"
#include "fast/core/finite.hpp"
#include "fast/core/saved_state.hpp"

namespace fast::compress {

namespace {
void check_unit(const char* what, double v, bool open_low) {
  const bool ok = (open_low ? v > 0 : v >= 0) && v <= 1;
  FAST_ENFORCE(ok, "dgc: {} must be in {}0, 1], got {}", what, open_low ? "(" : "[", v);
}
}  // namespace

Dgc::Dgc(const DgcOptions& options, std::size_t numel) : options_(options), numel_(numel) {
  FAST_ENFORCE(options.momentum >= 0 && options.momentum < 1, "dgc: momentum must be in [0, 1), got {}",
               options.momentum);
  check_unit("dampening", options.dampening, false);
  FAST_ENFORCE(!options.nesterov || options.dampening == 0, "dgc: nesterov needs dampening 0, got {}",
               options.dampening);
  FAST_ENFORCE(options.weight_decay >= 0, "dgc: weight_decay must be >= 0, got {}", options.weight_decay);
  FAST_ENFORCE(options.clip_norm >= 0 && std::isfinite(options.clip_norm),
               "dgc: clip_norm must be a finite number >= 0 (0: off), got {}", options.clip_norm);
  FAST_ENFORCE(options.workers >= 1, "dgc: workers must be >= 1, got {}", options.workers);
  check_unit("ratio (the codec's keep ratio)", options.ratio, true);
  check_unit("warmup_ratio", options.warmup_ratio, true);
  FAST_ENFORCE(options.warmup_steps >= 0, "dgc: warmup_steps must be >= 0, got {}", options.warmup_steps);
  if (options.momentum > 0) velocity_.assign(numel, 0.0f);
}

void Dgc::forget_velocity() noexcept {
  std::fill(velocity_.begin(), velocity_.end(), 0.0f);
  first_ = true;
}

void Dgc::set_workers(int workers) {
  FAST_ENFORCE(workers >= 1, "dgc: workers must be >= 1, got {}", workers);
  options_.workers = workers;
}

double Dgc::density(std::int64_t step) const {
  const DgcOptions& o = options_;
  if (o.warmup_steps == 0 || step >= o.warmup_steps || o.warmup_ratio <= o.ratio) return o.ratio;
  const double f = static_cast<double>(std::max<std::int64_t>(step, 0)) / static_cast<double>(o.warmup_steps);
  return std::exp((1 - f) * std::log(o.warmup_ratio) + f * std::log(o.ratio));
}

bool Dgc::accumulate(std::span<float> grads, std::span<const float> params, double lr) {
  FAST_ENFORCE(grads.size() == numel_ && params.size() == numel_,
               "dgc: gradient and parameters must have {} elements, got {} and {}", numel_, grads.size(),
               params.size());
  FAST_ENFORCE(lr >= 0 && std::isfinite(lr), "dgc: the learning rate must be a finite number >= 0, got {}", lr);
  clip_scale_ = 1;
  if (!core::all_finite(grads)) {
    std::fill(grads.begin(), grads.end(), 0.0f);
    return false;
  }
  const DgcOptions& o = options_;
  if (o.clip_norm > 0) {
    double sq = 0;
    for (const float g : grads) sq += static_cast<double>(g) * g;
    const double bound = o.clip_norm / std::sqrt(static_cast<double>(o.workers));
    const double norm = std::sqrt(sq);
    if (norm > bound) clip_scale_ = bound / norm;
  }
  const auto scale = static_cast<float>(clip_scale_);
  const auto wd = static_cast<float>(o.weight_decay);
  const auto mu = static_cast<float>(o.momentum);
  const auto omd = static_cast<float>(1 - o.dampening);
  const auto rate = static_cast<float>(lr);
  for (std::size_t i = 0; i < numel_; ++i) {
    float g = grads[i];
    if (clip_scale_ != 1) g *= scale;
    if (wd != 0) g += wd * params[i];
    if (velocity_.empty()) {
      grads[i] = rate * g;
      continue;
    }
    const float u = first_ ? g : mu * velocity_[i] + omd * g;
    velocity_[i] = u;
    grads[i] = rate * (o.nesterov ? g + mu * u : u);
  }
  first_ = false;
  return true;
}

void Dgc::mask(std::span<const float> sent, std::size_t offset) {
  FAST_ENFORCE(offset <= numel_ && sent.size() <= numel_ - offset,
               "dgc: mask of {} elements at offset {} exceeds the {} elements", sent.size(), offset, numel_);
  if (!options_.masking || velocity_.empty()) return;
  for (std::size_t j = 0; j < sent.size(); ++j)
    if (sent[j] != 0.0f) velocity_[offset + j] = 0.0f;
}

void Dgc::view(std::span<float> params, std::span<const double> residual, std::size_t offset) {
  FAST_ENFORCE(options_.local_view && (residual.empty() || params.size() == residual.size()) && offset <= numel_ &&
                   params.size() <= numel_ - offset,
               "dgc: view() of {} parameters and {} residual elements at offset {} of {} elements (local_view: {})",
               params.size(), residual.size(), offset, numel_, options_.local_view);  // checked before x changes
  if (shared_.empty()) shared_.assign(numel_, 0.0f);
  std::copy(params.begin(), params.end(), shared_.begin() + static_cast<std::ptrdiff_t>(offset));
  look(params, residual, offset);
}

void Dgc::look(std::span<float> params, std::span<const double> residual, std::size_t offset) const {
  FAST_ENFORCE(options_.local_view && !shared_.empty(), "dgc: look() without local_view or before view()");
  FAST_ENFORCE(
      (residual.empty() || params.size() == residual.size()) && offset <= numel_ && params.size() <= numel_ - offset,
      "dgc: look at {} parameters and {} residual elements at offset {} of {} elements", params.size(), residual.size(),
      offset, numel_);
  const float* x = shared_.data() + offset;
  if (residual.empty()) {
    std::copy_n(x, params.size(), params.begin());
    return;
  }
  for (std::size_t j = 0; j < params.size(); ++j)
    params[j] = static_cast<float>(static_cast<double>(x[j]) - residual[j]);
}

void Dgc::save(std::string_view prefix, core::SavedState& out) const {
  out.arrays.insert_or_assign(std::string(prefix) + ".velocity", velocity_);
  out.integers.insert_or_assign(std::string(prefix) + ".started", first_ ? 0 : 1);
  out.integers.insert_or_assign(std::string(prefix) + ".residual_units", kResidualUnits);
  if (!shared_.empty()) out.arrays.insert_or_assign(std::string(prefix) + ".shared", shared_);
}

void Dgc::restore(std::string_view prefix, const core::SavedState& in, std::string_view source,
                  std::span<float> params) {
  FAST_ENFORCE(params.size() == numel_, "dgc: restore with {} parameters, expected {}", params.size(), numel_);
  const std::vector<float>& velocity = in.array(std::string(prefix) + ".velocity", velocity_.size(), source);
  const std::string shared_name = std::string(prefix) + ".shared";
  const std::vector<float>* shared = in.arrays.contains(shared_name) ? &in.array(shared_name, numel_, source) : nullptr;
  const std::int64_t started = in.integer(std::string(prefix) + ".started", 0, 1, source);
  const std::string units = std::string(prefix) + ".residual_units";
  FAST_ENFORCE_AS(core::IoError, in.integers.contains(units),
                  "checkpoint '{}': its DGC residual holds gradients, from an older FAST that "
                  "applied the learning rate when a coordinate was sent; this FAST applies it when the "
                  "gradient is taken, so the residual cannot be resumed (no integer '{}'): train again "
                  "from the start, or resume with the FAST that wrote it",
                  source, units);
  in.integer(units, kResidualUnits, kResidualUnits, source);
  velocity_ = velocity;
  first_ = started == 0;
  if (!options_.local_view) {
    shared_.clear();
    if (shared != nullptr) std::copy(shared->begin(), shared->end(), params.begin());
  } else if (shared != nullptr) {
    shared_ = *shared;
  } else {
    shared_.assign(params.begin(), params.end());
  }
}

}  // namespace fast::compress
