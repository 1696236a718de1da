#include "fast/adapters/torch/device_codec.hpp"

#include <cstdint>
#include <limits>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "fast/compress/pack.hpp"
#include "fast/core/error.hpp"

namespace fast::torch {

namespace {

// The host copy of a device tensor (the tensor itself when it is on the host already), contiguous.
::torch::Tensor on_host(const ::torch::Tensor& t) { return t.to(::torch::kCPU).contiguous(); }

// The index and value of x's first element for which `bad` holds (a bool tensor of x's shape).
std::pair<std::int64_t, float> first_where(const ::torch::Tensor& bad, const ::torch::Tensor& x) {
  const std::int64_t i = bad.nonzero().flatten()[0].item<std::int64_t>();
  return {i, x[i].item<float>()};
}

}  // namespace

std::vector<std::string> DeviceEncoder::supported() { return {"fp16", "bf16", "sign", "topk:ratio=R"}; }

DeviceEncoder::DeviceEncoder(std::string_view spec) {
  const auto codec = compress::make_codec(spec);  // validates the spec, with the codecs' own messages
  const std::string_view name = codec->name();
  const bool global = spec.find("scope=tensor") == std::string_view::npos;
  if (name == "fp16")
    id_ = compress::CodecId::fp16;
  else if (name == "bf16")
    id_ = compress::CodecId::bf16;
  else if (name == "sign")
    id_ = compress::CodecId::sign;
  else if (name == "topk" && codec->keep_ratio() > 0 && global)
    id_ = compress::CodecId::topk;
  else
    FAST_THROW(InvalidArgument,
               "codec '{}': not offered on the device; expected one of {} (topk with a ratio and the "
               "global selection)",
               spec, fmt::join(supported(), ", "));
  ratio_ = codec->keep_ratio();
}

std::string_view DeviceEncoder::name() const noexcept {
  switch (id_) {
    case compress::CodecId::fp16: return "fp16";
    case compress::CodecId::bf16: return "bf16";
    case compress::CodecId::sign: return "sign";
    default: return "topk";
  }
}

bool DeviceEncoder::set_keep_ratio(double r) {
  if (id_ != compress::CodecId::topk) return false;
  FAST_ENFORCE(r > 0 && r <= 1, "codec 'topk': keep ratio must be in (0, 1], got {}", r);
  ratio_ = r;
  return true;
}

void DeviceEncoder::encode(const ::torch::Tensor& x, core::Buffer& out) const {
  FAST_ENFORCE(x.scalar_type() == ::torch::kFloat32 && x.dim() == 1 && x.is_contiguous(),
               "codec '{}' on the device: expected a contiguous one-dimensional float32 tensor, got {} of shape [{}]",
               name(), std::string(c10::toString(x.scalar_type())), fmt::join(x.sizes(), ", "));
  ::torch::NoGradGuard no_grad;
  if (id_ == compress::CodecId::sign)
    encode_sign(x, out);
  else if (id_ == compress::CodecId::topk)
    encode_topk(x, out);
  else
    encode_half(x, out);
}

void DeviceEncoder::encode_half(const ::torch::Tensor& x, core::Buffer& out) const {
  const bool fp16 = id_ == compress::CodecId::fp16;
  const ::torch::Tensor h = x.to(fp16 ? ::torch::kFloat16 : ::torch::kBFloat16);
  if (fp16) {
    const ::torch::Tensor overflow = h.isinf() & x.isfinite();
    if (overflow.any().item<bool>()) {
      const auto [i, v] = first_where(overflow, x);
      FAST_THROW(InvalidArgument, "codec 'fp16': element {} = {} overflows fp16 (largest finite 65504)", i, v);
    }
  }
  const ::torch::Tensor words = on_host(h.view(::torch::kInt16));
  compress::pack_halves(
      id_,
      {reinterpret_cast<const std::uint16_t*>(words.data_ptr<std::int16_t>()), static_cast<std::size_t>(words.numel())},
      out);
}

// scale = mean |x| summed in double, as the codec does (the order of the sum may differ: the scale
// can differ from the host's in its last bit); bit i%8 of byte i/8 = x_i < 0.
void DeviceEncoder::encode_sign(const ::torch::Tensor& x, core::Buffer& out) const {
  const std::int64_t n = x.numel();
  const double sum = n == 0 ? 0.0 : x.abs().sum(::torch::kFloat64).item<double>();
  const auto scale = n == 0 ? 0.0f : static_cast<float>(sum / static_cast<double>(n));
  FAST_ENFORCE(std::isfinite(scale), "codec 'sign': mean |x| = {} is not finite", scale);
  const std::int64_t bytes = (n + 7) / 8;
  ::torch::Tensor negative = (x < 0).to(::torch::kUInt8);
  if (bytes * 8 > n) negative = ::torch::cat({negative, ::torch::zeros({bytes * 8 - n}, negative.options())});
  const ::torch::Tensor weights =
      ::torch::tensor({1, 2, 4, 8, 16, 32, 64, 128}, ::torch::TensorOptions().dtype(::torch::kUInt8)).to(x.device());
  const ::torch::Tensor packed = on_host((negative.view({bytes, 8}) * weights).sum(1).to(::torch::kUInt8));
  compress::pack_sign(static_cast<std::size_t>(n), scale,
                      {packed.data_ptr<std::uint8_t>(), static_cast<std::size_t>(packed.numel())}, out);
}

// The k largest |x_i|, ties to the lower index: t = the k-th largest |x_i|; every |x_i| > t, then the
// lowest-indexed |x_i| == t until k are kept.
void DeviceEncoder::encode_topk(const ::torch::Tensor& x, core::Buffer& out) const {
  const auto n = static_cast<std::size_t>(x.numel());
  FAST_ENFORCE(n <= std::numeric_limits<std::uint32_t>::max(), "codec 'topk': n = {} exceeds the u32 index range", n);
  const ::torch::Tensor finite = x.isfinite();
  if (!finite.all().item<bool>()) {
    const auto [i, v] = first_where(finite.logical_not(), x);
    FAST_THROW(InvalidArgument, "codec 'topk': element {} = {} is not finite", i, v);
  }
  const auto k = static_cast<std::int64_t>(compress::kept_count(ratio_, n));
  ::torch::Tensor idx;
  if (k == static_cast<std::int64_t>(n)) {
    idx = ::torch::arange(k, x.options().dtype(::torch::kInt64));
  } else {
    const ::torch::Tensor a = x.abs();
    const ::torch::Tensor t = std::get<0>(a.topk(k, 0, /*largest=*/true, /*sorted=*/false)).min();
    const ::torch::Tensor above = a > t;
    const ::torch::Tensor at = a == t;
    const ::torch::Tensor room = k - above.sum();  // ties to take, on the device
    idx = (above | (at & (at.cumsum(0) <= room))).nonzero().flatten();
  }
  const ::torch::Tensor values = on_host(x.index_select(0, idx));
  const ::torch::Tensor indices = on_host(idx.to(::torch::kInt32));
  FAST_ENFORCE(indices.numel() == k, "codec 'topk' on the device: selected {} elements, expected k = {}",
               indices.numel(), k);
  compress::pack_sparse(
      compress::CodecId::topk, n,
      {reinterpret_cast<const std::uint32_t*>(indices.data_ptr<std::int32_t>()), static_cast<std::size_t>(k)},
      {values.data_ptr<float>(), static_cast<std::size_t>(k)}, out);
}

}  // namespace fast::torch
