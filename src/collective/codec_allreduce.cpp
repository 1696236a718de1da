#include "fast/collective/codec_allreduce.hpp"

#include <algorithm>
#include <string>

#include "fast/compress/powersgd.hpp"
#include "fast/core/buffer.hpp"
#include "fast/core/error.hpp"
#include "fast/core/random.hpp"
#include "fast/core/saved_state.hpp"

namespace fast::collective {

using core::Buffer;
using core::ConstView;
using core::MutableView;
using core::Work;
using runtime::make_tag;
using runtime::TagKind;

namespace {
// Segment s of W near-equal segments of n elements: [n s / W, n (s+1) / W).
std::pair<std::size_t, std::size_t> segment(std::size_t n, int parts, int s) {
  const auto w = static_cast<std::size_t>(parts);
  const auto i = static_cast<std::size_t>(s);
  return {n * i / w, n * (i + 1) / w};
}
int wrap(int v, int n) { return ((v % n) + n) % n; }
}  // namespace

// Per key: PowerSGD's Q (in state) and the error-feedback residual.
struct CodecAllreduce::LowRank {
  compress::PowerSgdState state;
  std::vector<double> residual;
};

CodecAllreduce::CodecAllreduce(Communicator& comm, CodecAllreduceOptions options)
    : comm_(comm), options_(std::move(options)) {
  const core::Layout* layout = options_.layout.empty() ? nullptr : &options_.layout;
  std::unique_ptr<compress::Codec> codec = compress::make_codec(
      options_.codec, core::worker_seed(options_.seed, static_cast<std::uint64_t>(comm.rank())), layout);
  path_ = path_of(*codec);
  switch (path_) {
    case Path::low_rank:
      powersgd_ = *compress::powersgd_options_of(*codec);
      powersgd_.seed = options_.seed;  // the same initial Q on every worker
      break;
    case Path::dense: break;
    case Path::ring:
      hop_codec_ = compress::make_codec(options_.codec, 0, layout);
      feedback_ = std::make_unique<compress::ErrorFeedback>(std::move(codec));
      break;
    case Path::gather: feedback_ = std::make_unique<compress::ErrorFeedback>(std::move(codec)); break;
  }
}

CodecAllreduce::Path CodecAllreduce::path_of(const compress::Codec& codec) {
  if (compress::powersgd_options_of(codec)) return Path::low_rank;
  if (codec.lossless()) return Path::dense;
  if (codec.elementwise()) return Path::ring;
  return Path::gather;
}

CodecAllreduce::~CodecAllreduce() = default;

void CodecAllreduce::forget_residuals() noexcept {
  if (feedback_) feedback_->reset_all();
  for (auto& [key, slot] : low_rank_) std::fill(slot->residual.begin(), slot->residual.end(), 0.0);
}

std::vector<double> CodecAllreduce::residual(std::uint64_t key) const {
  if (path_ == Path::low_rank) {
    const auto it = low_rank_.find(key);
    return it == low_rank_.end() ? std::vector<double>{} : it->second->residual;
  }
  if (feedback_ == nullptr) return {};
  const auto r = feedback_->residual(key);
  return {r.begin(), r.end()};
}

void CodecAllreduce::average(MutableView data, std::uint64_t key) {
  FAST_ENFORCE(data.dtype() == core::DType::f32, "CodecAllreduce({}): expected f32 data, got {}", options_.codec,
               core::name_of(data.dtype()));
  switch (path_) {
    case Path::dense: comm_.allreduce(data, {.op = ReduceOp::avg, .chunk_bytes = options_.chunk_bytes}); return;
    case Path::ring: ring(data.as<float>(), key); return;
    case Path::gather: gather(data.as<float>(), key); return;
    case Path::low_rank: low_rank(data.as<float>(), key); return;
  }
}

// Ring over encoded partial sums, round the members in rank order (n of them; me: this worker's
// index among them). Tags: detail = step (0..2W-3).
void CodecAllreduce::ring(std::span<float> data, std::uint64_t key) {
  runtime::Context& ctx = comm_.context();
  const int n = comm_.group_size();
  const int me = comm_.group_index();
  const std::uint32_t seq = comm_.reserve_sequence();
  // This worker's contribution, rounded by the codec once with error feedback: data = decode(encode(data + e)).
  {
    Buffer own;
    feedback_->encode(key, ConstView(std::span<const float>(data)), own);
    feedback_->codec().decode(own.view(), data);
  }
  if (n == 1) return;
  const int next = comm_.members()[static_cast<std::size_t>(wrap(me + 1, n))];
  const int prev = comm_.members()[static_cast<std::size_t>(wrap(me - 1, n))];
  std::vector<float> incoming;
  Buffer out;
  Buffer in;
  auto encode = [&](std::span<const float> values, Buffer& payload) {
    hop_codec_->encode(values, payload);
    if (options_.meter != nullptr) options_.meter->add(values.size() * sizeof(float), payload.bytes());
  };
  // Reduce-scatter: at step t, send segment (me - t) and add the received segment (me - t - 1).
  for (int t = 0; t < n - 1; ++t) {
    const auto [sb, se] = segment(data.size(), n, wrap(me - t, n));
    encode(data.subspan(sb, se - sb), out);
    const Work sent = ctx.send(next, make_tag(TagKind::collective, seq, static_cast<std::uint32_t>(t)), out.view());
    ctx.recv(prev, make_tag(TagKind::collective, seq, static_cast<std::uint32_t>(t)), in).wait();
    sent.wait();
    const auto [rb, re] = segment(data.size(), n, wrap(me - t - 1, n));
    incoming.resize(re - rb);
    hop_codec_->decode(in.view(), std::span<float>(incoming));
    for (std::size_t i = 0; i < incoming.size(); ++i) data[rb + i] += incoming[i];
  }
  // This worker now holds the full sum of segment me + 1. Encode it once, keep its decoding (so
  // every worker ends with the same values), then pass the encoded segments round the ring.
  const int owned = wrap(me + 1, n);
  {
    const auto [ob, oe] = segment(data.size(), n, owned);
    encode(data.subspan(ob, oe - ob), out);
    hop_codec_->decode(out.view(), data.subspan(ob, oe - ob));
  }
  for (int t = 0; t < n - 1; ++t) {
    const auto tag = make_tag(TagKind::collective, seq, static_cast<std::uint32_t>(n - 1 + t));
    const Work sent = ctx.send(next, tag, out.view());
    ctx.recv(prev, tag, in).wait();
    sent.wait();
    const auto [rb, re] = segment(data.size(), n, wrap(owned - t - 1, n));
    hop_codec_->decode(in.view(), data.subspan(rb, re - rb));
    std::swap(out, in);  // forward what was just received
  }
  const float inv = 1.0f / static_cast<float>(n);
  for (float& x : data) x *= inv;
}

bool CodecAllreduce::reduces_densely(std::size_t n) const {
  if (path_ != Path::gather || options_.sparse == SparseReduce::gather) return false;
  if (options_.sparse == SparseReduce::dense) return true;
  const compress::Codec& codec = feedback_->codec();
  if (!codec.fixed_size() && codec.keep_ratio() == 0) return false;  // threshold: its bound says nothing
  const double workers = comm_.group_size();
  return workers * static_cast<double>(codec.encoded_bytes(n)) > kSparseDenseCrossover * 8.0 * static_cast<double>(n);
}

// All-gather of encoded messages round the ring (tags: detail = step, 0..W-2), or the dense ring
// all-reduce of the decoded messages (reduces_densely).
void CodecAllreduce::gather(std::span<float> data, std::uint64_t key) {
  runtime::Context& ctx = comm_.context();
  const int n = comm_.group_size();
  const int me = comm_.group_index();
  std::vector<Buffer> payloads(static_cast<std::size_t>(n));
  feedback_->encode(key, ConstView(std::span<const float>(data)), payloads[static_cast<std::size_t>(me)]);
  if (options_.meter != nullptr)
    options_.meter->add(data.size() * sizeof(float), payloads[static_cast<std::size_t>(me)].bytes());
  if (reduces_densely(data.size())) {
    const std::span<const float> mine = feedback_->last_sent();
    std::copy(mine.begin(), mine.end(), data.begin());
    comm_.allreduce(MutableView(data), {.op = ReduceOp::avg, .chunk_bytes = options_.chunk_bytes});
    return;
  }
  const std::uint32_t seq = comm_.reserve_sequence();
  const int next = comm_.members()[static_cast<std::size_t>(wrap(me + 1, n))];
  const int prev = comm_.members()[static_cast<std::size_t>(wrap(me - 1, n))];
  // At step t this worker forwards the payload of worker me - t and receives that of me - t - 1.
  for (int t = 0; t < n - 1; ++t) {
    const auto tag = make_tag(TagKind::collective, seq, static_cast<std::uint32_t>(t));
    const Work sent = ctx.send(next, tag, payloads[static_cast<std::size_t>(wrap(me - t, n))].view());
    ctx.recv(prev, tag, payloads[static_cast<std::size_t>(wrap(me - t - 1, n))]).wait();
    sent.wait();
  }
  // Sum of the decoded messages in the members' rank order: the same float operations on every worker.
  std::vector<float> decoded(data.size());
  std::fill(data.begin(), data.end(), 0.0f);
  for (int w = 0; w < n; ++w) {
    feedback_->codec().decode(payloads[static_cast<std::size_t>(w)].view(), std::span<float>(decoded));
    for (std::size_t i = 0; i < data.size(); ++i) data[i] += decoded[i];
  }
  const float inv = 1.0f / static_cast<float>(n);
  for (float& x : data) x *= inv;
}

std::unique_ptr<CodecAllreduce::LowRank> CodecAllreduce::make_low_rank(std::size_t n) const {
  const core::Layout layout = options_.layout.empty() ? core::flat_layout(n) : options_.layout;
  return std::unique_ptr<LowRank>(
      new LowRank{compress::PowerSgdState(layout, n, powersgd_), std::vector<double>(n, 0.0)});
}

void CodecAllreduce::save(std::string_view prefix, core::SavedState& out) const {
  if (feedback_) feedback_->save(std::string(prefix) + ".feedback", out);
  for (const auto& [key, slot] : low_rank_) {
    const std::string base = fmt::format("{}.low_rank.{}", prefix, key);
    slot->state.save(base, out);
    out.doubles.insert_or_assign(base + ".residual", slot->residual);
  }
}

void CodecAllreduce::restore(std::string_view prefix, const core::SavedState& in, std::string_view source) {
  if (feedback_) feedback_->restore(std::string(prefix) + ".feedback", in, source);
  const std::string base = std::string(prefix) + ".low_rank.";
  std::unordered_map<std::uint64_t, std::unique_ptr<LowRank>> restored;  // in place only once all is read
  for (const auto& [key, residual] : in.keyed_doubles(base, ".residual", source)) {
    std::unique_ptr<LowRank> slot = make_low_rank(residual->size());
    slot->state.restore(fmt::format("{}{}", base, key), in, source);
    slot->residual = *residual;
    restored.emplace(key, std::move(slot));
  }
  low_rank_ = std::move(restored);
}

// PowerSGD's low-rank all-reduce (compress/powersgd.hpp gives the recipe): two dense all-reduces
// of the factors P and Q, one of the elements outside the matrix blocks.
void CodecAllreduce::low_rank(std::span<float> data, std::uint64_t key) {
  auto& slot = low_rank_[key];
  if (!slot) slot = make_low_rank(data.size());
  FAST_ENFORCE_EQ(slot->residual.size(), data.size(), "CodecAllreduce(powersgd): tensor length of key {}", key);
  compress::PowerSgdState& state = slot->state;
  // M = data + residual (float32), kept to form the new residual.
  std::vector<float> m(data.size());
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(data[i] + slot->residual[i]);
  std::vector<float> p(state.p_size()), q(state.q_size());
  if (!powersgd_.warm_start) state.reset_q();
  state.compute_p(m, p);
  const AllreduceOptions sum{.op = ReduceOp::sum, .chunk_bytes = options_.chunk_bytes};
  if (!p.empty()) comm_.allreduce(MutableView(std::span<float>(p)), sum);
  state.orthonormalise(p);
  state.compute_q(m, p, q);
  if (!q.empty())
    comm_.allreduce(MutableView(std::span<float>(q)), {.op = ReduceOp::avg, .chunk_bytes = options_.chunk_bytes});
  state.set_q(q);
  // Dense elements: averaged exactly, no residual.
  std::vector<float> dense(state.dense_size());
  std::size_t at = 0;
  for (const auto& [b, e] : state.dense_ranges())
    for (std::size_t i = b; i < e; ++i) dense[at++] = m[i];
  if (!dense.empty())
    comm_.allreduce(MutableView(std::span<float>(dense)), {.op = ReduceOp::avg, .chunk_bytes = options_.chunk_bytes});
  state.reconstruct(p, q, data);  // matrix blocks: P Q^T
  at = 0;
  for (const auto& [b, e] : state.dense_ranges())
    for (std::size_t i = b; i < e; ++i) data[i] = dense[at++];
  // Residual: what this worker's M lost in the approximation (matrix blocks only; dense is exact
  // up to the average, which is the aggregation itself, not a codec error).
  for (const compress::LowRankBlock& blk : state.blocks())
    for (std::size_t i = blk.offset; i < blk.offset + blk.rows * blk.cols; ++i)
      slot->residual[i] = static_cast<double>(m[i]) - static_cast<double>(data[i]);
  // The whole tensor, as the codec's encode counts it: its payload is P, Q and the vector elements.
  if (options_.meter != nullptr)
    options_.meter->add(data.size() * sizeof(float), (p.size() + q.size() + dense.size()) * sizeof(float));
}

}  // namespace fast::collective
