#include "fast/compress/delta_link.hpp"

#include <algorithm>
#include <string>

#include "fast/core/error.hpp"
#include "fast/core/saved_state.hpp"

namespace fast::compress {

namespace {
void start_from(std::vector<float>& reference, std::span<const float> initial, const char* who) {
  if (initial.empty()) return;
  FAST_ENFORCE_EQ(initial.size(), reference.size(), "{}: initial reference length", who);
  std::copy(initial.begin(), initial.end(), reference.begin());
}
}  // namespace

DeltaSender::DeltaSender(std::unique_ptr<Codec> codec, std::size_t n, std::span<const float> initial)
    : codec_(std::move(codec)), reference_(n, 0.0f), diff_(n), decoded_(n) {
  FAST_ENFORCE(codec_ != nullptr, "DeltaSender: codec must not be null");
  start_from(reference_, initial, "DeltaSender");
}

void DeltaSender::encode(core::ConstView x, core::Buffer& out, CompressionMeter* meter) {
  FAST_ENFORCE_EQ(x.numel(), reference_.size(), "DeltaSender({}): tensor length of the link", codec_->name());
  const std::size_t n = reference_.size();
  if (x.dtype() == core::DType::f32) {
    const auto v = x.as<float>();
    for (std::size_t i = 0; i < n; ++i) diff_[i] = v[i] - reference_[i];
  } else if (x.dtype() == core::DType::f64) {
    const auto v = x.as<double>();
    for (std::size_t i = 0; i < n; ++i) diff_[i] = static_cast<float>(v[i] - static_cast<double>(reference_[i]));
  } else {
    FAST_THROW(core::InvalidArgument, "DeltaSender({}): expected f32 or f64 data, got {}", codec_->name(),
               core::name_of(x.dtype()));
  }
  codec_->encode(std::span<const float>(diff_), out);
  codec_->decode(out.view(), std::span<float>(decoded_));
  for (std::size_t i = 0; i < n; ++i) reference_[i] += decoded_[i];
  if (meter != nullptr) meter->add(n * sizeof(float), out.bytes());  // the codec's f32 input, whatever x's type
}

DeltaReceiver::DeltaReceiver(std::unique_ptr<Codec> codec, std::size_t n, std::span<const float> initial)
    : codec_(std::move(codec)), reference_(n, 0.0f), decoded_(n) {
  FAST_ENFORCE(codec_ != nullptr, "DeltaReceiver: codec must not be null");
  start_from(reference_, initial, "DeltaReceiver");
}

void DeltaSender::save(std::string_view prefix, core::SavedState& out) const {
  out.arrays.insert_or_assign(std::string(prefix) + ".reference", reference_);
  codec_->save_state(std::string(prefix) + ".codec", out);
}

void DeltaSender::restore(std::string_view prefix, const core::SavedState& in, std::string_view source) {
  const std::vector<float>& reference = in.array(std::string(prefix) + ".reference", reference_.size(), source);
  codec_->restore_state(std::string(prefix) + ".codec", in, source);
  reference_ = reference;
}

void DeltaReceiver::save(std::string_view prefix, core::SavedState& out) const {
  out.arrays.insert_or_assign(std::string(prefix) + ".reference", reference_);
}

void DeltaReceiver::restore(std::string_view prefix, const core::SavedState& in, std::string_view source) {
  reference_ = in.array(std::string(prefix) + ".reference", reference_.size(), source);
}

std::span<const float> DeltaReceiver::decode(core::ConstView payload) {
  codec_->decode(payload, std::span<float>(decoded_));  // validates first; throws before any change
  for (std::size_t i = 0; i < reference_.size(); ++i) reference_[i] += decoded_[i];
  return reference_;
}

void copy_into(std::span<const float> src, core::MutableView dst) {
  FAST_ENFORCE_EQ(src.size(), dst.numel(), "copy_into: length");
  if (dst.dtype() == core::DType::f32) {
    std::copy(src.begin(), src.end(), dst.as<float>().begin());
  } else {
    FAST_ENFORCE(dst.dtype() == core::DType::f64, "copy_into: expected f32 or f64 output, got {}",
                 core::name_of(dst.dtype()));
    auto out = dst.as<double>();
    for (std::size_t i = 0; i < src.size(); ++i) out[i] = src[i];
  }
}

}  // namespace fast::compress
