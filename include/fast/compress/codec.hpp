#pragma once
// Codecs: how a float32 tensor becomes the bytes that travel, and back.
//
// A Codec turns n float32 values into a self-describing u8 payload (encode) and a payload back into
// n float32 values (decode). Every payload starts with the same 16-byte header (docs/compression.md):
//   bytes 0-3   magic "FCDC"
//   byte  4     codec id (CodecId below)
//   byte  5     format version (2)
//   bytes 6-7   zero
//   bytes 8-15  n, the number of float32 elements, little-endian u64
// followed by the codec's body (documented at the top of each src/compress/*.cpp and in
// docs/compression.md). All multi-byte fields are little-endian.
//
// decode validates the whole payload (dtype, length, magic, codec id, version, n against out.numel(),
// k <= n, indices in range and strictly increasing, padding bits zero) before it writes to `out`;
// on any defect it throws InvalidArgument naming the codec, the defect, expected and got, and leaves
// `out` unchanged.
//
// Codecs are chosen by name through make_codec ("topk:ratio=0.01"). Per codec, the header comment of
// make_codec states its options, whether it is lossless, unbiased (E[decode(encode(x))] = x over the
// codec's randomness) and its error bound.
//
// Thread-safety: a Codec is not synchronised. Stateful codecs (int8, randk, powersgd) advance a random
// stream or keep state (powersgd's warm-started Q) on every encode; use one Codec per link (or per
// thread). decode is const and keeps no state.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fast/core/buffer.hpp"
#include "fast/core/layout.hpp"
#include "fast/core/tensor_view.hpp"

namespace fast::core {
struct SavedState;  // fast/core/saved_state.hpp
class SpecFamily;   // fast/core/spec.hpp
}  // namespace fast::core

namespace fast::compress {

// The codec id byte of the payload header.
enum class CodecId : std::uint8_t {
  none = 0,
  fp16 = 1,
  bf16 = 2,
  int8 = 3,
  sign = 4,
  topk = 5,
  randk = 6,
  threshold = 7,
  powersgd = 8
};

inline constexpr std::size_t kHeaderBytes = 16;

class Codec {
 public:
  virtual ~Codec() = default;
  Codec() = default;
  Codec(const Codec&) = delete;
  Codec& operator=(const Codec&) = delete;

  // The registry name ("topk", ...).
  virtual std::string_view name() const = 0;
  // Encodes input (f32, any n; InvalidArgument for another dtype) into out, resized to u8 of the
  // payload's exact size. On error, out's contents are unspecified.
  virtual void encode(core::ConstView input, core::Buffer& out) = 0;
  // Decodes payload (u8) into out (f32, n elements as written in the header). Validates first: on
  // error throws InvalidArgument and out is unchanged.
  virtual void decode(core::ConstView payload, core::MutableView out) const = 0;
  // Payload bytes for n elements: exact when fixed_size(), else an upper bound (topk, threshold).
  virtual std::size_t encoded_bytes(std::size_t n) const = 0;
  // Whether encoded_bytes(n) is the exact payload size for every input of n elements.
  virtual bool fixed_size() const { return true; }
  // Whether decode(encode(x)) == x bit for bit (only "none").
  virtual bool lossless() const { return false; }
  // Whether E[decode(encode(x))] == x over the codec's randomness (none, int8).
  virtual bool unbiased() const { return false; }
  // Whether each element is encoded on its own, deterministically and without state, into a fixed
  // width (fp16, bf16; none is lossless() as well): a partial sum can then be encoded again at every
  // hop of a ring all-reduce (collective::CodecAllreduce's ring path) instead of being gathered.
  virtual bool elementwise() const { return false; }
  // The consensus step gamma of CHOCO-gossip (dpsgd and acid with this codec, when their
  // consensus_step is 0) that suits this codec's error: 1 for none, fp16 and bf16, 0.8 for int8,
  // 0.4 for sign, 0.05 for the sparsifiers and powersgd (docs/compression.md).
  virtual double consensus_step() const { return 0.05; }
  // The fraction of elements a sparsifying codec keeps (topk, randk given ratio=r); 0 for the other
  // codecs and for topk/randk given k=K.
  virtual double keep_ratio() const { return 0; }
  // Changes keep_ratio() to r, in (0, 1], for later encodes (the sparsity warm-up of
  // compress::Dgc) and returns true; returns false and changes nothing where keep_ratio() is 0.
  // InvalidArgument for r outside (0, 1].
  virtual bool set_keep_ratio(double /*r*/) { return false; }

  // Checkpoints: the state a later encode depends on (int8 and randk: the position of their random
  // stream; powersgd: its warm-started Q and the draws of its stream), saved into `out` under names
  // that start with `prefix` (stateless codecs save nothing). restore_state sets it back from `in`,
  // a codec made with the same spec and seed; IoError naming `source` when a value is missing or of
  // another size, and then nothing changes.
  virtual void save_state(std::string_view /*prefix*/, core::SavedState& /*out*/) const {}
  virtual void restore_state(std::string_view /*prefix*/, const core::SavedState& /*in*/, std::string_view /*source*/) {
  }
};

// The declarations of the codecs and their keys (core/spec.hpp: keyed syntax), in registry order:
// what make_codec reads, `fast config-doc` documents and the declarations' test probes.
const core::SpecFamily& codec_family();
// The names make_codec accepts, in registry order.
std::vector<std::string> codec_names();
// The same, each with the form of its options for help texts, from the declarations
// ("int8[:levels=LEVELS,bucket=BUCKET]", "threshold:value=VALUE").
std::vector<std::string> codec_specs();

// Builds a codec from "NAME" or "NAME:key=value,key=value". seed feeds the random stream of the
// stateful codecs (int8, randk, powersgd); the others ignore it. layout (copied) gives powersgd the
// matrices inside the buffer; nullptr means flat_layout(n) at encode time (one vector: all dense); the
// other codecs ignore it. InvalidArgument for an unknown name (listing the allowed names), an unknown key
// (listing the codec's keys), a repeated key, or a bad value (naming the key, the expected range and the
// value got).
//
//   none                 f32 copy. Lossless.
//   fp16                 IEEE binary16, round to nearest even. |err| <= 2^-11 |x| for 2^-14 <= |x| <= 65504,
//                        <= 2^-25 below; encode throws InvalidArgument for a finite |x| that rounds to inf
//                        (|x| >= 65520). NaN and inf pass through.
//   bf16                 bfloat16, round to nearest even. |err| <= 2^-8 |x| for normal x.
//   int8:levels=s,bucket=B  QSGD with s levels (1..127, default 127) and buckets of B elements (1..2^32-1,
//                        default 512, QSGD's bucketing): the norm ||x_b||_2 (f32) of each bucket of B
//                        consecutive elements (the last may be shorter) and one signed level l_i in [-s, s]
//                        per element; decode x_i = norm_b * l_i / s. Unbiased (up to the 2^-24 resolution of
//                        the rounding draw); per element Var = (norm_b/s)^2 p (1 - p) <= (norm_b/s)^2 / 4
//                        with p the fraction of |x_i| s / norm_b, so E||err||^2 <= B ||x||^2 / (4 s^2).
//   sign                 scaled sign: scale = mean |x| (f32), one bit per element; decode = +scale for
//                        x_i >= 0 (and +0, -0), -scale for x_i < 0. Biased.
//   topk:ratio=r | k=K   the k = min(n, K) or max(1, ceil(r n)) (r in (0, 1], default 0.01) largest |x_i|,
//                        ties to the lower index, sent as k f32 values and the indices in the smallest of
//                        three forms (u32, LEB128 delta, bitmap); the rest decode to 0. Variable size:
//                        encoded_bytes is the bound 25 + 4k + min(4k, ceil(n/8)). Biased (use
//                        ErrorFeedback). Input must be finite and n < 2^32.
//                        scope=tensor: with a layout, k is taken per tensor (k_b = max(1, ceil(r n_b))
//                        of each block, elements outside every block forming one more), so a layer
//                        with small gradients still sends its share; scope=global (default): over all n.
//   randk:ratio=r | k=K  k indices drawn uniformly without replacement from a per-message seed (written in
//                        the payload, drawn from the codec's seed) and the k values, unscaled; the rest
//                        decode to 0. Biased (E = (k/n) x); use ErrorFeedback. n < 2^32.
//   threshold:value=t    every x_i with |x_i| >= t (t >= 0, finite, required), same wire body as topk.
//                        Variable size: encoded_bytes is the bound for k = n.
//   powersgd:rank=R,warm_start=true|false
//                        (R in 1..1024, default 4; warm_start default true) each matrix block of the layout
//                        (TensorBlock::is_matrix) becomes P (rows x r, orthonormal columns) and Q (cols x r),
//                        r = min(R, rows, cols), by one power iteration from the Q kept since the previous
//                        encode (fresh from the seed without warm start); decode = P Q^T, the best rank-r
//                        approximation in the limit of warm-started steps on a fixed matrix. Other elements
//                        travel dense f32. Biased (use ErrorFeedback). Input must be finite. Primitives for a
//                        low-rank all-reduce: fast/compress/powersgd.hpp.
std::unique_ptr<Codec> make_codec(std::string_view spec, std::uint64_t seed = 0, const core::Layout* layout = nullptr);

}  // namespace fast::compress
