#include "fast/compress/error_feedback.hpp"

#include <string>

#include "fast/core/error.hpp"
#include "fast/core/saved_state.hpp"

namespace fast::compress {

ErrorFeedback::ErrorFeedback(std::unique_ptr<Codec> codec) : codec_(std::move(codec)) {
  FAST_ENFORCE(codec_ != nullptr, "ErrorFeedback: codec must not be null");
}

void ErrorFeedback::encode(std::uint64_t key, core::ConstView input, core::Buffer& out) {
  FAST_ENFORCE(input.dtype() == core::DType::f32, "ErrorFeedback({}): input must be f32, got {}", codec_->name(),
               core::name_of(input.dtype()));
  auto x = input.as<float>();
  const auto it = residuals_.find(key);
  if (it != residuals_.end())
    FAST_ENFORCE(it->second.size() == x.size(), "ErrorFeedback({}): key {} has {} elements, input has {}",
                 codec_->name(), key, it->second.size(), x.size());
  const std::vector<double>* r = it == residuals_.end() ? nullptr : &it->second;
  corrected_.resize(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    corrected_[i] = static_cast<float>(static_cast<double>(x[i]) + (r ? (*r)[i] : 0.0));
  codec_->encode(std::span<const float>(corrected_), out);
  decoded_.resize(x.size());
  codec_->decode(out.view(), std::span<float>(decoded_));
  std::vector<double>& res = residuals_[key];  // created here, after the codec succeeded
  res.resize(x.size(), 0.0);
  for (std::size_t i = 0; i < x.size(); ++i) res[i] = (static_cast<double>(x[i]) + res[i]) - decoded_[i];
}

std::span<const double> ErrorFeedback::residual(std::uint64_t key) const {
  const auto it = residuals_.find(key);
  if (it == residuals_.end()) return {};
  return it->second;
}

void ErrorFeedback::save(std::string_view prefix, core::SavedState& out) const {
  const std::string base = std::string(prefix) + ".residual.";
  for (const auto& [key, residual] : residuals_) out.doubles.insert_or_assign(base + std::to_string(key), residual);
  codec_->save_state(std::string(prefix) + ".codec", out);
}

void ErrorFeedback::restore(std::string_view prefix, const core::SavedState& in, std::string_view source) {
  std::unordered_map<std::uint64_t, std::vector<double>> restored;
  for (const auto& [key, residual] : in.keyed_doubles(std::string(prefix) + ".residual.", "", source))
    restored.emplace(key, *residual);
  codec_->restore_state(std::string(prefix) + ".codec", in, source);
  residuals_ = std::move(restored);
}

void ErrorFeedback::reset(std::uint64_t key) { residuals_.erase(key); }

void ErrorFeedback::clear_sent(std::uint64_t key) {
  const auto it = residuals_.find(key);
  FAST_ENFORCE(it != residuals_.end() && it->second.size() == decoded_.size(),
               "ErrorFeedback({}): clear_sent of key {}, which was not the last key encoded", codec_->name(), key);
  std::vector<double>& res = it->second;
  for (std::size_t i = 0; i < res.size(); ++i)
    if (decoded_[i] != 0.0f) res[i] = 0.0;
}

}  // namespace fast::compress
