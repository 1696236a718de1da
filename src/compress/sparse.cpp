// Sparsifying codecs.
//   topk, threshold: body = u64 k, k u32 indices (strictly increasing, < n), k f32 values.
//   randk:           body = u64 k, u64 message seed, k f32 values; the indices are the k distinct
//                    indices sample_indices(n, k, seed) draws (Floyd's algorithm on a splitmix64 stream),
//                    in increasing order, so encoder and decoder agree without sending them.
// Every other element decodes to 0.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "codecs.hpp"
#include "wire.hpp"

namespace fast::compress {

std::size_t KeepCount::of(std::size_t n) const {
  if (n == 0) return 0;
  if (k > 0) return std::min(k, n);
  const auto want = static_cast<std::size_t>(std::ceil(ratio * static_cast<double>(n)));
  return std::clamp<std::size_t>(want, 1, n);
}

namespace {

constexpr std::size_t kMaxSparseN = std::numeric_limits<std::uint32_t>::max();

std::size_t index_value_bytes(std::size_t k) { return kHeaderBytes + 8 + 8 * k; }

// Writes the topk/threshold body for the sorted indices idx of x.
void encode_indexed(CodecId id, std::span<const float> x, const std::vector<std::uint32_t>& idx, core::Buffer& out) {
  std::uint8_t* body = wire::begin_payload(out, index_value_bytes(idx.size()), id, x.size());
  wire::put<std::uint64_t>(body, idx.size());
  std::uint8_t* ip = body + 8;
  std::uint8_t* vp = ip + 4 * idx.size();
  for (std::size_t j = 0; j < idx.size(); ++j) {
    wire::put<std::uint32_t>(ip + 4 * j, idx[j]);
    wire::put<float>(vp + 4 * j, x[idx[j]]);
  }
}

void decode_indexed(std::string_view codec, CodecId id, core::ConstView payload, core::MutableView out) {
  auto p = wire::check_header(codec, id, payload, out);
  const std::size_t n = out.numel();
  FAST_ENFORCE(p.size() >= kHeaderBytes + 8, "codec '{}': truncated payload of {} bytes, expected at least {}", codec,
               p.size(), kHeaderBytes + 8);
  const std::uint8_t* body = p.data() + kHeaderBytes;
  const auto k = wire::get<std::uint64_t>(body);
  FAST_ENFORCE(k <= n, "codec '{}': payload k = {} exceeds n = {}", codec, k, n);
  wire::check_length(codec, p.size(), index_value_bytes(k), "16-byte header + 8 + 8 k");
  const std::uint8_t* ip = body + 8;
  std::uint64_t prev = 0;
  for (std::size_t j = 0; j < k; ++j) {
    const auto i = wire::get<std::uint32_t>(ip + 4 * j);
    FAST_ENFORCE(i < n, "codec '{}': index {} of entry {} out of range, expected < n = {}", codec, i, j, n);
    FAST_ENFORCE(j == 0 || i > prev, "codec '{}': index {} of entry {} not above the previous index {}", codec, i, j,
                 prev);
    prev = i;
  }
  auto y = out.as<float>();
  std::fill(y.begin(), y.end(), 0.0f);
  const std::uint8_t* vp = ip + 4 * k;
  for (std::size_t j = 0; j < k; ++j) y[wire::get<std::uint32_t>(ip + 4 * j)] = wire::get<float>(vp + 4 * j);
}

class TopkCodec final : public Codec {
 public:
  explicit TopkCodec(KeepCount keep) : keep_(keep) {}
  std::string_view name() const override { return "topk"; }
  std::size_t encoded_bytes(std::size_t n) const override { return index_value_bytes(keep_.of(n)); }

  void encode(core::ConstView input, core::Buffer& out) override {
    wire::check_input(name(), input);
    auto x = input.as<float>();
    FAST_ENFORCE(x.size() <= kMaxSparseN, "codec 'topk': n = {} exceeds the u32 index range", x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      FAST_ENFORCE(std::isfinite(x[i]), "codec 'topk': element {} = {} is not finite", i, x[i]);
    const std::size_t k = keep_.of(x.size());
    std::vector<std::uint32_t> idx(x.size());
    std::iota(idx.begin(), idx.end(), 0u);
    // Larger magnitude first; equal magnitudes: lower index first (a strict total order).
    auto before = [&](std::uint32_t a, std::uint32_t b) {
      const float ma = std::fabs(x[a]), mb = std::fabs(x[b]);
      return ma > mb || (ma == mb && a < b);
    };
    if (k < idx.size()) std::nth_element(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(), before);
    idx.resize(k);
    std::sort(idx.begin(), idx.end());
    encode_indexed(CodecId::topk, x, idx, out);
  }
  void decode(core::ConstView payload, core::MutableView out) const override {
    decode_indexed(name(), CodecId::topk, payload, out);
  }

 private:
  KeepCount keep_;
};

class ThresholdCodec final : public Codec {
 public:
  explicit ThresholdCodec(float value) : value_(value) {}
  std::string_view name() const override { return "threshold"; }
  std::size_t encoded_bytes(std::size_t n) const override { return index_value_bytes(n); }
  bool fixed_size() const override { return false; }

  void encode(core::ConstView input, core::Buffer& out) override {
    wire::check_input(name(), input);
    auto x = input.as<float>();
    FAST_ENFORCE(x.size() <= kMaxSparseN, "codec 'threshold': n = {} exceeds the u32 index range", x.size());
    std::vector<std::uint32_t> idx;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (std::fabs(x[i]) >= value_) idx.push_back(static_cast<std::uint32_t>(i));
    encode_indexed(CodecId::threshold, x, idx, out);
  }
  void decode(core::ConstView payload, core::MutableView out) const override {
    decode_indexed(name(), CodecId::threshold, payload, out);
  }

 private:
  float value_;
};

// splitmix64: a small, fully specified generator, so both ends of a link draw the same indices.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, m), m > 0, by rejection (no modulo bias).
  std::uint64_t below(std::uint64_t m) {
    const std::uint64_t limit = (0 - m) % m;  // 2^64 mod m
    for (;;) {
      const std::uint64_t r = next();
      if (r >= limit) return r % m;
    }
  }
};

// k distinct indices of [0, n), increasing (Floyd's sampling).
std::vector<std::uint32_t> sample_indices(std::size_t n, std::size_t k, std::uint64_t seed) {
  std::vector<bool> chosen(n, false);
  SplitMix64 g{seed};
  for (std::size_t j = n - k; j < n; ++j) {
    const auto t = static_cast<std::size_t>(g.below(j + 1));
    chosen[chosen[t] ? j : t] = true;
  }
  std::vector<std::uint32_t> idx;
  idx.reserve(k);
  for (std::size_t i = 0; i < n; ++i)
    if (chosen[i]) idx.push_back(static_cast<std::uint32_t>(i));
  return idx;
}

class RandkCodec final : public Codec {
 public:
  RandkCodec(KeepCount keep, std::uint64_t seed) : keep_(keep), rng_(seed) {}
  std::string_view name() const override { return "randk"; }
  std::size_t encoded_bytes(std::size_t n) const override { return kHeaderBytes + 16 + 4 * keep_.of(n); }

  void encode(core::ConstView input, core::Buffer& out) override {
    wire::check_input(name(), input);
    auto x = input.as<float>();
    FAST_ENFORCE(x.size() <= kMaxSparseN, "codec 'randk': n = {} exceeds the u32 index range", x.size());
    const std::size_t k = keep_.of(x.size());
    const std::uint64_t seed = rng_();
    const auto idx = sample_indices(x.size(), k, seed);
    std::uint8_t* body = wire::begin_payload(out, encoded_bytes(x.size()), CodecId::randk, x.size());
    wire::put<std::uint64_t>(body, k);
    wire::put<std::uint64_t>(body + 8, seed);
    for (std::size_t j = 0; j < k; ++j) wire::put<float>(body + 16 + 4 * j, x[idx[j]]);
  }

  void decode(core::ConstView payload, core::MutableView out) const override {
    auto p = wire::check_header(name(), CodecId::randk, payload, out);
    const std::size_t n = out.numel();
    FAST_ENFORCE(p.size() >= kHeaderBytes + 16, "codec 'randk': truncated payload of {} bytes, expected at least {}",
                 p.size(), kHeaderBytes + 16);
    const std::uint8_t* body = p.data() + kHeaderBytes;
    const auto k = wire::get<std::uint64_t>(body);
    FAST_ENFORCE(k <= n, "codec 'randk': payload k = {} exceeds n = {}", k, n);
    wire::check_length(name(), p.size(), kHeaderBytes + 16 + 4 * k, "16-byte header + 16 + 4 k");
    const auto idx = sample_indices(n, k, wire::get<std::uint64_t>(body + 8));
    auto y = out.as<float>();
    std::fill(y.begin(), y.end(), 0.0f);
    for (std::size_t j = 0; j < k; ++j) y[idx[j]] = wire::get<float>(body + 16 + 4 * j);
  }

 private:
  KeepCount keep_;
  std::mt19937_64 rng_;
};

}  // namespace

std::unique_ptr<Codec> make_topk(KeepCount keep) { return std::make_unique<TopkCodec>(keep); }
std::unique_ptr<Codec> make_randk(KeepCount keep, std::uint64_t seed) { return std::make_unique<RandkCodec>(keep, seed); }
std::unique_ptr<Codec> make_threshold(float value) { return std::make_unique<ThresholdCodec>(value); }

}  // namespace fast::compress
