// Sparsifying codecs (format version 2).
//   topk, threshold: body = u64 k, u8 index form, k f32 values (in increasing index order), then the k
//                    strictly increasing indices (< n) in the chosen form, filling the payload exactly:
//                      form 0 (u32):    k u32 indices                                     4 k bytes
//                      form 1 (delta):  k LEB128 varints d_0 = i_0, d_j = i_j - i_{j-1} - 1  sum of varint sizes
//                      form 2 (bitmap): ceil(n / 8) bytes, bit i%8 (LSB first) of byte i/8 set when i is
//                                       kept; padding bits zero; popcount = k          ceil(n / 8) bytes
//                    The encoder picks the smallest form; on a tie the lower form number.
//   randk:           body = u64 k, u64 message seed, k f32 values; the indices are the k distinct
//                    indices sample_indices(n, k, seed) draws (Floyd's algorithm on a core::SplitMix64 stream),
//                    in increasing order, so encoder and decoder agree without sending them.
// Every other element decodes to 0.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "codecs.hpp"
#include "fast/compress/pack.hpp"
#include "fast/core/random.hpp"
#include "wire.hpp"

namespace fast::compress {

std::size_t kept_count(double ratio, std::size_t n) {
  if (n == 0) return 0;
  const auto want = static_cast<std::size_t>(std::ceil(ratio * static_cast<double>(n)));
  return std::clamp<std::size_t>(want, 1, n);
}

std::size_t KeepCount::of(std::size_t n) const { return k > 0 ? std::min(k, n) : kept_count(ratio, n); }

namespace {

constexpr std::size_t kMaxSparseN = std::numeric_limits<std::uint32_t>::max();

// Codec::set_keep_ratio of topk and randk: keep.ratio = r unless the codec keeps a fixed count.
bool set_ratio(std::string_view codec, KeepCount& keep, double r) {
  FAST_ENFORCE(r > 0 && r <= 1, "codec '{}': keep ratio must be in (0, 1], got {}", codec, r);
  if (keep.k > 0) return false;
  keep.ratio = r;
  return true;
}
constexpr std::size_t kIndexedFixed = kHeaderBytes + 9;  // header, u64 k, u8 form

enum IndexForm : std::uint8_t { kU32 = 0, kDelta = 1, kBitmap = 2 };

std::size_t varint_size(std::uint32_t v) noexcept {
  return 1 + (v >= (1u << 7)) + (v >= (1u << 14)) + (v >= (1u << 21)) + (v >= (1u << 28));
}

std::size_t delta_bytes(std::span<const std::uint32_t> idx) {
  std::size_t bytes = 0;
  std::uint32_t prev_next = 0;  // previous index + 1
  for (const std::uint32_t i : idx) {
    bytes += varint_size(i - prev_next);
    prev_next = i + 1;
  }
  return bytes;
}

// Index-section bytes of each form for k kept indices of n.
std::size_t form_bytes(IndexForm f, std::size_t n, std::span<const std::uint32_t> idx) {
  switch (f) {
    case kU32: return 4 * idx.size();
    case kDelta: return delta_bytes(idx);
    default: return (n + 7) / 8;
  }
}

// The worst case over forms is u32 capped by the bitmap: min(4k, ceil(n/8)) (delta <= 5k but is never
// chosen when larger than u32).
std::size_t indexed_bound(std::size_t n, std::size_t k) { return kIndexedFixed + 4 * k + std::min(4 * k, (n + 7) / 8); }

// Writes the topk/threshold body for the strictly increasing indices idx of an n-element input whose
// kept values value_at(j) gives, j = 0 .. k-1.
template <typename ValueAt>
void write_indexed(CodecId id, std::size_t n, std::span<const std::uint32_t> idx, ValueAt value_at, core::Buffer& out) {
  const std::size_t k = idx.size();
  IndexForm form = kU32;
  std::size_t ibytes = form_bytes(kU32, n, idx);
  for (IndexForm f : {kDelta, kBitmap}) {
    const std::size_t b = form_bytes(f, n, idx);
    if (b < ibytes) form = f, ibytes = b;
  }
  std::uint8_t* body = wire::begin_payload(out, kIndexedFixed + 4 * k + ibytes, id, n);
  wire::put<std::uint64_t>(body, k);
  body[8] = form;
  std::uint8_t* vp = body + 9;
  for (std::size_t j = 0; j < k; ++j) wire::put<float>(vp + 4 * j, value_at(j));
  std::uint8_t* ip = vp + 4 * k;
  if (form == kU32) {
    for (std::size_t j = 0; j < k; ++j) wire::put<std::uint32_t>(ip + 4 * j, idx[j]);
  } else if (form == kDelta) {
    std::uint32_t prev_next = 0;
    for (const std::uint32_t i : idx) {
      std::uint32_t d = i - prev_next;
      prev_next = i + 1;
      while (d >= 0x80u) {
        *ip++ = static_cast<std::uint8_t>(d | 0x80u);
        d >>= 7;
      }
      *ip++ = static_cast<std::uint8_t>(d);
    }
  } else {
    std::memset(ip, 0, ibytes);  // a reused Buffer keeps old bytes
    for (const std::uint32_t i : idx) ip[i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
  }
}

void encode_indexed(CodecId id, std::span<const float> x, const std::vector<std::uint32_t>& idx, core::Buffer& out) {
  write_indexed(
      id, x.size(), idx, [&](std::size_t j) { return x[idx[j]]; }, out);
}

// Validates the index section (form, length, range, order, popcount) and returns the indices.
std::vector<std::uint32_t> read_indices(std::string_view codec, const std::uint8_t* ip, std::size_t ibytes,
                                        IndexForm form, std::size_t n, std::size_t k) {
  std::vector<std::uint32_t> idx(k);
  if (form == kU32) {
    wire::check_length(codec, ibytes, 4 * k, "u32 index section of 4 k bytes");
    std::uint64_t prev = 0;
    for (std::size_t j = 0; j < k; ++j) {
      const auto i = wire::get<std::uint32_t>(ip + 4 * j);
      FAST_ENFORCE(i < n, "codec '{}': index {} of entry {} out of range, expected < n = {}", codec, i, j, n);
      FAST_ENFORCE(j == 0 || i > prev, "codec '{}': index {} of entry {} not above the previous index {}", codec, i, j,
                   prev);
      prev = i;
      idx[j] = i;
    }
  } else if (form == kDelta) {
    std::size_t at = 0;
    std::uint64_t next = 0;  // the smallest index entry j may take
    for (std::size_t j = 0; j < k; ++j) {
      std::uint64_t d = 0;
      for (int shift = 0;; shift += 7) {
        FAST_ENFORCE(at < ibytes,
                     "codec '{}': truncated delta index section: entry {} of k = {} runs past its {} bytes", codec, j,
                     k, ibytes);
        FAST_ENFORCE(shift < 35, "codec '{}': delta of entry {} longer than 5 bytes, expected a u32 LEB128 varint",
                     codec, j);
        const std::uint8_t b = ip[at++];
        d |= static_cast<std::uint64_t>(b & 0x7fu) << shift;
        if ((b & 0x80u) == 0) break;
      }
      const std::uint64_t i = next + d;
      FAST_ENFORCE(i < n, "codec '{}': index {} of entry {} (sum of the gaps) out of range, expected < n = {}", codec,
                   i, j, n);
      idx[j] = static_cast<std::uint32_t>(i);
      next = i + 1;
    }
    FAST_ENFORCE(at == ibytes, "codec '{}': wrong-length delta index section: {} trailing bytes after the k = {} gaps",
                 codec, ibytes - at, k);
  } else {
    wire::check_length(codec, ibytes, (n + 7) / 8, "bitmap index section of ceil(n / 8) bytes");
    if (n % 8 != 0) {
      const auto pad = static_cast<std::uint8_t>(ip[n / 8] >> (n % 8));
      FAST_ENFORCE(pad == 0, "codec '{}': padding bits of the last bitmap byte are {:#x}, expected 0", codec, pad);
    }
    std::size_t count = 0;
    for (std::size_t b = 0; b < ibytes; ++b) count += static_cast<std::size_t>(std::popcount(ip[b]));
    FAST_ENFORCE(count == k, "codec '{}': bitmap popcount {} differs from k = {}", codec, count, k);
    std::size_t j = 0;
    for (std::size_t b = 0; b < ibytes; ++b)
      for (unsigned bits = ip[b]; bits != 0; bits &= bits - 1)
        idx[j++] = static_cast<std::uint32_t>(8 * b + static_cast<std::size_t>(std::countr_zero(bits)));
  }
  return idx;
}

void decode_indexed(std::string_view codec, CodecId id, core::ConstView payload, core::MutableView out) {
  auto p = wire::check_header(codec, id, payload, out);
  const std::size_t n = out.numel();
  FAST_ENFORCE(p.size() >= kIndexedFixed, "codec '{}': truncated payload of {} bytes, expected at least {}", codec,
               p.size(), kIndexedFixed);
  const std::uint8_t* body = p.data() + kHeaderBytes;
  const auto k = wire::get<std::uint64_t>(body);
  FAST_ENFORCE(k <= n, "codec '{}': payload k = {} exceeds n = {}", codec, k, n);
  const auto form = static_cast<IndexForm>(body[8]);
  FAST_ENFORCE(body[8] <= kBitmap, "codec '{}': index form {}, expected 0 (u32), 1 (delta) or 2 (bitmap)", codec,
               body[8]);
  FAST_ENFORCE(p.size() >= kIndexedFixed + 4 * k,
               "codec '{}': truncated payload of {} bytes, expected at least {} (header + 9 + 4 k values)", codec,
               p.size(), kIndexedFixed + 4 * k);
  const std::uint8_t* vp = body + 9;
  const auto idx = read_indices(codec, vp + 4 * k, p.size() - kIndexedFixed - 4 * k, form, n, k);
  auto y = out.as<float>();
  std::fill(y.begin(), y.end(), 0.0f);
  for (std::size_t j = 0; j < k; ++j) y[idx[j]] = wire::get<float>(vp + 4 * j);
}

// |x| as ordered u32 keys: for finite floats, a larger magnitude is a larger key; >= 0x7f800000 is inf/NaN.
inline std::uint32_t mag_bits(float v) noexcept { return std::bit_cast<std::uint32_t>(v) & 0x7fffffffu; }

// The indices (increasing) of the k largest |x_i|, ties to the lower index. Exact: a sampled threshold t
// picks the candidates with key >= t; when at least k exist the top k all lie among them (every other
// element is smaller than each of them), and an exact selection on (key, -index) finishes. Otherwise t
// becomes 0 (every element).
std::vector<std::uint32_t> top_indices(std::span<const float> x, std::size_t k) {
  const std::size_t n = x.size();
  std::vector<std::uint32_t> idx;
  if (k == 0) return idx;
  if (k == n) {
    idx.resize(n);
    for (std::size_t i = 0; i < n; ++i) idx[i] = static_cast<std::uint32_t>(i);
    return idx;
  }
  // Sample about 16k keys on a fixed stride; aim for ~1.5 k candidates.
  std::uint32_t t = 0;
  const std::size_t stride = std::max<std::size_t>(1, n / 16384);
  if (stride > 1 && k * 64 < n * 8) {
    std::vector<std::uint32_t> sample;
    sample.reserve(n / stride + 1);
    for (std::size_t i = stride / 2; i < n; i += stride) sample.push_back(mag_bits(x[i]));
    const double want = 1.5 * static_cast<double>(k) / static_cast<double>(n) * static_cast<double>(sample.size());
    const auto r = static_cast<std::size_t>(std::min<double>(want, static_cast<double>(sample.size() - 1)));
    std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(r), sample.end(), std::greater<>());
    t = sample[r];
  }
  std::vector<std::uint32_t> cand;
  cand.reserve(2 * k + 64);
  for (std::size_t i = 0; i < n; ++i)
    if (mag_bits(x[i]) >= t) cand.push_back(static_cast<std::uint32_t>(i));
  if (cand.size() < k) {  // the sample overshot: take every element
    cand.resize(n);
    for (std::size_t i = 0; i < n; ++i) cand[i] = static_cast<std::uint32_t>(i);
  }
  std::vector<std::uint64_t> keys(cand.size());
  for (std::size_t j = 0; j < cand.size(); ++j)
    keys[j] = (static_cast<std::uint64_t>(mag_bits(x[cand[j]])) << 32) | (0xffffffffu - cand[j]);
  std::nth_element(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(k - 1), keys.end(), std::greater<>());
  idx.resize(k);
  for (std::size_t j = 0; j < k; ++j) idx[j] = 0xffffffffu - static_cast<std::uint32_t>(keys[j]);
  std::sort(idx.begin(), idx.end());
  return idx;
}

class TopkCodec final : public Codec {
 public:
  TopkCodec(KeepCount keep, bool per_tensor, const core::Layout* layout) : keep_(keep) {
    if (per_tensor && layout != nullptr) layout_ = *layout;
  }
  std::string_view name() const override { return "topk"; }
  std::size_t encoded_bytes(std::size_t n) const override {
    std::size_t k = 0;
    for (const auto& [b, e] : ranges(n)) k += keep_.of(e - b);
    return indexed_bound(n, k);
  }
  bool fixed_size() const override { return false; }
  double keep_ratio() const override { return keep_.k > 0 ? 0.0 : keep_.ratio; }
  bool set_keep_ratio(double r) override { return set_ratio(name(), keep_, r); }

  void encode(core::ConstView input, core::Buffer& out) override {
    wire::check_input(name(), input);
    auto x = input.as<float>();
    FAST_ENFORCE(x.size() <= kMaxSparseN, "codec 'topk': n = {} exceeds the u32 index range", x.size());
    std::uint32_t worst = 0;
    for (const float v : x) worst = std::max(worst, mag_bits(v));
    if (worst >= 0x7f800000u)
      for (std::size_t i = 0; i < x.size(); ++i)
        FAST_ENFORCE(std::isfinite(x[i]), "codec 'topk': element {} = {} is not finite", i, x[i]);
    std::vector<std::uint32_t> idx;
    for (const auto& [b, e] : ranges(x.size())) {
      const std::vector<std::uint32_t> part = top_indices(x.subspan(b, e - b), keep_.of(e - b));
      for (const std::uint32_t i : part) idx.push_back(static_cast<std::uint32_t>(b + i));
    }
    encode_indexed(CodecId::topk, x, idx, out);
  }
  void decode(core::ConstView payload, core::MutableView out) const override {
    decode_indexed(name(), CodecId::topk, payload, out);
  }

 private:
  // The selection ranges of an n-element input, increasing: [0, n) overall, or each layout block
  // inside [0, n) and each gap between them (per tensor).
  std::vector<std::pair<std::size_t, std::size_t>> ranges(std::size_t n) const {
    if (!layout_) return {{0, n}};
    std::vector<std::pair<std::size_t, std::size_t>> out;
    std::size_t at = 0;
    for (const core::TensorBlock& b : *layout_) {
      if (b.offset < at || b.offset + b.numel > n) continue;  // overlapping or outside: left to the gaps
      if (b.offset > at) out.emplace_back(at, b.offset);
      if (b.numel > 0) out.emplace_back(b.offset, b.offset + b.numel);
      at = b.offset + b.numel;
    }
    if (at < n) out.emplace_back(at, n);
    return out;
  }

  KeepCount keep_;
  std::optional<core::Layout> layout_;  // per tensor: the blocks
};

class ThresholdCodec final : public Codec {
 public:
  explicit ThresholdCodec(float value) : value_(value) {}
  std::string_view name() const override { return "threshold"; }
  std::size_t encoded_bytes(std::size_t n) const override { return indexed_bound(n, n); }
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

// k distinct indices of [0, n), increasing (Floyd's sampling on core::SplitMix64(seed), a fully
// specified generator, so both ends of a link draw the same indices).
std::vector<std::uint32_t> sample_indices(std::size_t n, std::size_t k, std::uint64_t seed) {
  std::vector<std::uint8_t> chosen(n, 0);
  core::SplitMix64 g(seed);
  for (std::size_t j = n - k; j < n; ++j) {
    const auto t = static_cast<std::size_t>(core::below_rejecting_bottom(g, j + 1));
    chosen[chosen[t] ? j : t] = 1;
  }
  std::vector<std::uint32_t> idx(k + 1);
  std::size_t c = 0;
  for (std::size_t i = 0; i < n; ++i) {
    idx[c] = static_cast<std::uint32_t>(i);
    c += chosen[i];
  }
  idx.resize(k);
  return idx;
}

class RandkCodec final : public Codec {
 public:
  RandkCodec(KeepCount keep, std::uint64_t seed) : keep_(keep), rng_(seed) {}
  std::string_view name() const override { return "randk"; }
  std::size_t encoded_bytes(std::size_t n) const override { return kHeaderBytes + 16 + 4 * keep_.of(n); }
  double keep_ratio() const override { return keep_.k > 0 ? 0.0 : keep_.ratio; }
  bool set_keep_ratio(double r) override { return set_ratio(name(), keep_, r); }

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

  void save_state(std::string_view prefix, core::SavedState& out) const override { rng_.save(prefix, out); }
  void restore_state(std::string_view prefix, const core::SavedState& in, std::string_view source) override {
    rng_.restore(prefix, in, source);
  }

 private:
  KeepCount keep_;
  CountedStream rng_;
};

}  // namespace

void pack_sparse(CodecId id, std::size_t n, std::span<const std::uint32_t> indices, std::span<const float> values,
                 core::Buffer& out) {
  const std::string_view codec = id == CodecId::topk ? "topk" : "threshold";
  FAST_ENFORCE(id == CodecId::topk || id == CodecId::threshold, "pack_sparse: codec id {}; expected topk or threshold",
               static_cast<int>(id));
  FAST_ENFORCE(n <= kMaxSparseN, "codec '{}': n = {} exceeds the u32 index range", codec, n);
  FAST_ENFORCE(values.size() == indices.size(), "codec '{}': {} values for {} indices; expected one per index", codec,
               values.size(), indices.size());
  for (std::size_t j = 0; j < indices.size(); ++j)
    FAST_ENFORCE(indices[j] < n && (j == 0 || indices[j] > indices[j - 1]),
                 "codec '{}': index {} of entry {}; expected strictly increasing indices below n = {}", codec,
                 indices[j], j, n);
  write_indexed(
      id, n, indices, [&](std::size_t j) { return values[j]; }, out);
}

std::unique_ptr<Codec> make_topk(KeepCount keep, bool per_tensor, const core::Layout* layout) {
  return std::make_unique<TopkCodec>(keep, per_tensor, layout);
}
std::unique_ptr<Codec> make_randk(KeepCount keep, std::uint64_t seed) {
  return std::make_unique<RandkCodec>(keep, seed);
}
std::unique_ptr<Codec> make_threshold(float value) { return std::make_unique<ThresholdCodec>(value); }

}  // namespace fast::compress
