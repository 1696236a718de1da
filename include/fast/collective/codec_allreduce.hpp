#pragma once
// CodecAllreduce: the average of a float32 tensor over all workers, with every message through a
// codec (compress/) and error feedback on each worker's own contribution. Collective: every worker
// calls average() at the same point, with the same key and length.
//
// The codec decides the algorithm (path()):
//   dense     none               Communicator::allreduce (ring, exact f32).
//   ring      fp16, bf16         the values can be summed: a ring reduce-scatter whose messages are
//                                the encoded partial sums (decoded, added, re-encoded at each hop),
//                                then a ring all-gather of each segment's encoded sum. Bytes per
//                                worker: 2 (W-1)/W x the encoded tensor.
//   gather   int8, sign, topk,   messages cannot be summed encoded: every worker's encoded tensor
//            randk, threshold    goes round a ring all-gather (forwarded as is, never re-encoded);
//                                each worker decodes all W and sums them in rank order. Bytes per
//                                worker: (W-1) x the encoded tensor.
//   low_rank powersgd            PowerSGD (Vogels et al., 2019): per matrix block M (layout), with
//                                the warm-started Q: P = sum_w M_w Q (dense ring all-reduce),
//                                orthonormalised; Q = (1/W) sum_w M_w^T P (dense ring all-reduce);
//                                M ~ P Q^T. Vector blocks are averaged dense.
//
// Error feedback (the gather, ring and low_rank paths): this worker's contribution is data + e,
// where e (float64, one per key) is what the codec dropped of its contributions so far; for the
// ring path e is the rounding of its own contribution, for low_rank e = M - P Q^T. Keys tell apart
// tensors averaged by the same worker (gradients, model deltas).
//
// On return every worker holds bit-identical data (each decodes the same payloads in the same
// order, and a segment's owner keeps the decoded value of what it sent).
//
// "Workers" are the members of the communicator's group (Communicator::members(), every rank until
// an elastic group changes): the rings run over the members in rank order and the average divides
// by their number, so the same object goes on after the group changes.
//
// Thread-safety: one CodecAllreduce per worker, used by one activity at a time.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fast/collective/communicator.hpp"
#include "fast/compress/codec.hpp"
#include "fast/compress/error_feedback.hpp"
#include "fast/compress/meter.hpp"
#include "fast/compress/powersgd.hpp"
#include "fast/core/layout.hpp"

namespace fast::collective {

// How the gather path's codecs (int8, sign, topk, randk, threshold) reduce, per average() call:
//   gather  the all-gather of the encoded messages above;
//   dense   each worker decodes its own message (its error feedback keeps the decoding) and the
//           decoded vectors are averaged by the dense ring all-reduce: 2 (W-1)/W x 4n bytes per
//           worker instead of (W-1) x the payload, and one decode instead of W;
//   auto    dense when W x encoded_bytes(n) > kSparseDenseCrossover x 8n (the payload bound of the
//           codec, the same on every worker, against the dense ring's bytes), else gather;
//           threshold, whose bound (every element kept) says nothing of its messages, gathers. The
//           crossover was measured (bench_sparse_allreduce, docs/benchmarks.md (i)).
// Both give the same average up to float reassociation; every worker holds the same result.
enum class SparseReduce : std::uint8_t { auto_choice, gather, dense };
inline constexpr double kSparseDenseCrossover = 1.0;

struct CodecAllreduceOptions {
  std::string codec = "none";  // compress::make_codec spec
  std::uint64_t seed = 0;      // the codec's random stream (int8, randk); per worker it is mixed with the rank
  core::Layout layout;         // the tensor's blocks (powersgd); empty: one vector block
  std::size_t chunk_bytes = std::size_t{4} << 20;   // pipeline piece of the dense ring all-reduces
  compress::CompressionMeter* meter = nullptr;      // counts every encode (not owned; may be null)
  SparseReduce sparse = SparseReduce::auto_choice;  // the gather path's reduction, see above
};

class CodecAllreduce {
 public:
  enum class Path { dense, ring, gather, low_rank };
  // The path a codec's messages take, from its traits (never its name): low_rank for powersgd,
  // dense for a lossless codec, ring for an element-wise one, else gather (the only path that
  // CodecAllreduceOptions::sparse applies to).
  static Path path_of(const compress::Codec& codec);

  // InvalidArgument for a bad codec spec (make_codec's message).
  CodecAllreduce(Communicator& comm, CodecAllreduceOptions options);
  ~CodecAllreduce();

  // Collective among the group's members: data (f32) = the average of their contributions as
  // described above.
  void average(core::MutableView data, std::uint64_t key);

  Path path() const noexcept { return path_; }
  // Whether average() of n elements on the gather path reduces densely (SparseReduce above).
  bool reduces_densely(std::size_t n) const;
  // The error-feedback residual of key (empty before its first average, and on the dense path).
  std::vector<double> residual(std::uint64_t key) const;
  // The error feedback of this worker's contributions on the gather and ring paths (null on the
  // others): compress::Dgc's sparsity warm-up sets its codec's keep ratio and masks its residual.
  compress::ErrorFeedback* feedback() noexcept { return feedback_.get(); }
  // Forgets every key's residual (the error feedback of the ring and gather paths, the low_rank
  // path's residuals): each key's next average sends this worker's input alone. The codec's random
  // stream and PowerSGD's Q (the same on every worker) are kept. Elastic groups call it on every
  // survivor of a regrouping and on an admitted worker (Strategy::forget_own_state; docs/faults.md,
  // "Elastic synchronous training"). Local: no communication.
  void forget_residuals() noexcept;

  // Checkpoints: everything a later average() depends on besides its input: the error feedback of
  // the ring and gather paths (residuals and the codec's stream, "<prefix>.feedback...") and, on the
  // low_rank path, each key's Q, stream draws and residual ("<prefix>.low_rank.<key>..."). restore
  // takes them into a CodecAllreduce of the same codec, seed, layout and rank (IoError naming
  // `source` for a missing or malformed value). Local: no communication.
  void save(std::string_view prefix, core::SavedState& out) const;
  void restore(std::string_view prefix, const core::SavedState& in, std::string_view source);

 private:
  void ring(std::span<float> data, std::uint64_t key);
  void gather(std::span<float> data, std::uint64_t key);
  void low_rank(std::span<float> data, std::uint64_t key);

  Communicator& comm_;
  CodecAllreduceOptions options_;
  Path path_ = Path::dense;
  std::unique_ptr<compress::ErrorFeedback> feedback_;  // ring and gather paths
  std::unique_ptr<compress::Codec> hop_codec_;         // ring path: encodes partial sums
  struct LowRank;                                      // low_rank path: per key, Q and the residual
  std::unique_ptr<LowRank> make_low_rank(std::size_t n) const;
  std::unordered_map<std::uint64_t, std::unique_ptr<LowRank>> low_rank_;
  compress::PowerSgdOptions powersgd_;  // low_rank path
};

}  // namespace fast::collective
