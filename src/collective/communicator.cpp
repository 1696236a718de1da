#include "fast/collective/communicator.hpp"

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <vector>

#include <fmt/ranges.h>

#include "allreduce_algorithms.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/native_collectives.hpp"
#include "fast/runtime/shared_rendezvous.hpp"
#include "group_ops.hpp"
#include "member_watch.hpp"

namespace fast::collective {

using core::MutableView;
using core::Work;
using runtime::Combine;
using runtime::make_tag;
using runtime::TagKind;

namespace {

using detail::check_reducible;
using detail::piece_range;
using detail::Range;
using detail::run_then_drain;
using detail::scale;
using detail::wrap;

}  // namespace

Communicator::Communicator(runtime::Context& ctx, CommunicatorOptions options)
    : own_(ctx),
      watch_(options.elastic ? std::make_unique<detail::MemberWatch>(ctx, members_, formed_at_) : nullptr),
      ctx_(watch_ ? static_cast<runtime::Context*>(watch_.get()) : &ctx),
      joining_(ctx.joins_run_under_way()),
      default_algorithm_(options.allreduce_algorithm),
      shared_memory_(options.shared_memory) {
  if (auto model = ctx.network_model())
    network_ = *model;
  else
    network_ = default_network();
  if (options.latency_seconds) network_.latency_seconds = *options.latency_seconds;
  if (options.bandwidth_bytes_per_second) network_.bandwidth_bytes_per_second = *options.bandwidth_bytes_per_second;
  network_configured_ = options.latency_seconds.has_value() || options.bandwidth_bytes_per_second.has_value();
  FAST_ENFORCE(
      network_.bandwidth_bytes_per_second > 0 && network_.latency_seconds >= 0 && network_.local_bytes_per_second >= 0,
      "communicator: the network needs a positive bandwidth and latency >= 0, got {} B/s and {} s",
      network_.bandwidth_bytes_per_second, network_.latency_seconds);
  members_.reserve(static_cast<std::size_t>(ctx.size()));
  for (int r = 0; r < ctx.size(); ++r) members_.push_back(r);
  index_ = ctx.rank();
}

void Communicator::not_while_joining() const {
  FAST_THROW(core::InvalidUsage,
             "communicator: worker {} joins a run under way (it took a lost worker's rank back) and cannot run a "
             "set-up collective with the others; only set-up that can stand in for its collectives may run before "
             "end_join()",
             ctx_->rank());
}

void Communicator::exclude_lost() {
  ctx_->ensure_alive(ctx_->rank());
  ctx_->settle_lost_peers();  // every survivor then sees every loss that happened before it got here
  std::vector<int> alive;
  for (int r : members_)
    if (ctx_->alive(r)) alive.push_back(r);
  members_ = std::move(alive);
  index_ = static_cast<int>(std::find(members_.begin(), members_.end(), ctx_->rank()) - members_.begin());
  FAST_ENFORCE_AS(core::InvalidUsage, index_ < group_size(), "exclude_lost: worker {} is lost itself", ctx_->rank());
}

Communicator::~Communicator() = default;

void Communicator::regroup(std::vector<int> members, std::uint32_t next_sequence, std::optional<double> formed_at) {
  const auto at = std::find(members.begin(), members.end(), own_.rank());
  FAST_ENFORCE_AS(core::InvalidUsage, at != members.end(), "regroup: worker {} is not among the members {}",
                  own_.rank(), fmt::join(members, ", "));
  index_ = static_cast<int>(at - members.begin());
  members_ = std::move(members);
  sequence_.store(next_sequence, std::memory_order_relaxed);
  formed_at_ = formed_at.value_or(own_.now());
}

bool Communicator::lost_since_formed(int rank) const { return runtime::lost_since(own_, rank, formed_at_); }

void Communicator::watch_members() {
  if (watch_) return;
  // The group as it is now (exclude_lost() or regroup() made it): a member lost and taken back
  // before now is a member (lost_since_formed).
  formed_at_ = own_.now();
  watch_ = std::make_unique<detail::MemberWatch>(own_, members_, formed_at_);
  ctx_ = watch_.get();
}

void Communicator::after_next_send(std::function<void()> then) {
  FAST_ENFORCE_AS(core::InvalidUsage, watch_ != nullptr, "Communicator::after_next_send: needs an elastic group");
  watch_->after_next_send(std::move(then));
}

runtime::NativeCollectives* Communicator::native() const {
  if (group_size() != ctx_->size()) return nullptr;
  return ctx_->native_collectives();
}

void Communicator::native_allreduce(runtime::NativeCollectives& native, std::uint64_t ticket, MutableView data,
                                    ReduceOp op) {
  native_count_.fetch_add(1, std::memory_order_relaxed);
  native.allreduce_sum(ticket, data);
  if (op == ReduceOp::avg) scale(data, 1.0 / group_size());
}

runtime::SharedRendezvous* Communicator::shared_for(const MutableView& data, const AllreduceOptions& options) const {
  if (!shared_memory_ || group_size() != ctx_->size() || group_size() < 2 || data.numel() == 0) return nullptr;
  if (options.chunk_bytes == 0) return nullptr;  // the message path names the error
  return ctx_->shared_rendezvous();
}

void Communicator::allreduce(MutableView data, const AllreduceOptions& options) {
  const std::uint32_t sequence = next_sequence();
  if (auto* n = native()) {
    // The native collective refuses a dtype it cannot sum itself, after the ranks' agreement check
    // (FAST_CHECK_COLLECTIVES): a dtype that differs between ranks then fails every rank alike.
    native_allreduce(*n, n->reserve(), data, options.op);
    return;
  }
  if (auto* rendezvous = shared_for(data, options)) {
    check_reducible(data);  // before the ticket, as above
    shared_allreduce(*rendezvous, rendezvous->reserve(), data, options);
    return;
  }
  run_allreduce(data, options, sequence);
}

Work Communicator::allreduce_async(MutableView data, AllreduceOptions options) {
  const std::uint32_t sequence = next_sequence();  // reserved now, so call order decides matching
  if (auto* n = native()) {                        // its dtype checked by the native collective, as in allreduce()
    const std::uint64_t ticket = n->reserve();
    return ctx_->spawn("allreduce",
                       [this, n, ticket, data, op = options.op] { native_allreduce(*n, ticket, data, op); });
  }
  if (auto* rendezvous = shared_for(data, options)) {
    check_reducible(data);
    const std::uint64_t ticket = rendezvous->reserve();
    return ctx_->spawn("allreduce", [this, rendezvous, ticket, data, options] {
      shared_allreduce(*rendezvous, ticket, data, options);
    });
  }
  return ctx_->spawn("allreduce", [this, data, options, sequence] { run_allreduce(data, options, sequence); });
}

AllreduceAlgorithm Communicator::resolve(std::size_t bytes, const AllreduceOptions& options) const {
  const AllreduceAlgorithm asked =
      options.algorithm != AllreduceAlgorithm::automatic ? options.algorithm : default_algorithm_;
  if (asked != AllreduceAlgorithm::automatic) return asked;
  // Two members: every algorithm computes a + b once per element (b + a at the partner, the same
  // bits), so the runtime's cost of a message between them may choose without changing a result.
  if (group_size() == 2 && !network_configured_)
    if (const auto pair = ctx_->pair_network_model(members_[0], members_[1])) return choose_allreduce(bytes, 2, *pair);
  return choose_allreduce(bytes, group_size(), network_);
}

std::vector<std::pair<std::string, std::uint64_t>> Communicator::allreduce_counts() const {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  if (const std::uint64_t c = native_count_.load(std::memory_order_relaxed)) out.emplace_back("native", c);
  for (std::size_t a = 0; a < counts_.size(); ++a)
    if (const std::uint64_t c = counts_[a].load(std::memory_order_relaxed))
      out.emplace_back(name_of(static_cast<AllreduceAlgorithm>(a)), c);
  return out;
}

// Borrows a buffer from the Communicator's pool (or a new one) and gives it back on destruction.
class Communicator::ScratchLease {
 public:
  explicit ScratchLease(Communicator& comm) : comm_(comm) {
    std::lock_guard<std::mutex> lock(comm_.scratch_mutex_);
    if (comm_.scratch_pool_.empty()) return;
    buffer_ = std::move(comm_.scratch_pool_.back());
    comm_.scratch_pool_.pop_back();
  }
  ~ScratchLease() {
    std::lock_guard<std::mutex> lock(comm_.scratch_mutex_);
    comm_.scratch_pool_.push_back(std::move(buffer_));
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  core::Buffer& buffer() noexcept { return buffer_; }

 private:
  Communicator& comm_;
  core::Buffer buffer_;
};

void Communicator::shared_allreduce(runtime::SharedRendezvous& rendezvous, std::uint64_t ticket, MutableView data,
                                    const AllreduceOptions& options) {
  const AllreduceAlgorithm algorithm = resolve(data.bytes(), options);
  counts_[static_cast<std::size_t>(algorithm)].fetch_add(1, std::memory_order_relaxed);
  ScratchLease scratch(*this);
  detail::shared_allreduce(rendezvous, ticket, index_, group_size(), algorithm, data, options.op, options.chunk_bytes,
                           scratch.buffer());
}

void Communicator::run_allreduce(MutableView data, const AllreduceOptions& options, std::uint32_t sequence) {
  check_reducible(data);
  const AllreduceAlgorithm algorithm = resolve(data.bytes(), options);
  counts_[static_cast<std::size_t>(algorithm)].fetch_add(1, std::memory_order_relaxed);
  if (algorithm == AllreduceAlgorithm::ring) return ring_allreduce(data, options, sequence);
  ScratchLease scratch(*this);
  const detail::GroupCall group{*ctx_, members_, index_, sequence, scratch.buffer()};
  switch (algorithm) {
    case AllreduceAlgorithm::recursive_doubling: return detail::recursive_doubling_allreduce(group, data, options.op);
    case AllreduceAlgorithm::halving_doubling: return detail::halving_doubling_allreduce(group, data, options.op);
    case AllreduceAlgorithm::tree: return detail::tree_allreduce(group, data, options.op);
    default: FAST_THROW(core::InvalidArgument, "allreduce: no algorithm '{}'", name_of(algorithm));
  }
}

// Ring all-reduce: n-1 reduce-scatter steps then n-1 all-gather steps. At global step g
// (0 <= g < 2(n-1)) worker r sends segment (r - g) mod n to its right neighbour and receives
// segment (r - g - 1) mod n from its left one, adding during reduce-scatter, copying during
// all-gather. Each segment is cut into pieces; piece k of step g is forwarded as soon as piece k
// of step g-1 has arrived (the pipeline). Sends read the caller's memory in place, so before a
// piece is overwritten, the send that last read it (step g+1-n) is waited for.
void Communicator::ring_allreduce(MutableView data, const AllreduceOptions& options, std::uint32_t sequence) {
  FAST_ENFORCE(options.chunk_bytes > 0, "allreduce: chunk_bytes must be positive");
  const int n = group_size();
  const int r = index_;  // ring positions are indices in the group
  if (n == 1) return;    // sum and average of one worker are the data itself
  const std::size_t numel = data.numel();
  const std::size_t pieces = detail::pieces_for(numel, n, core::size_of(data.dtype()), options.chunk_bytes);
  const int steps = 2 * (n - 1);
  FAST_ENFORCE(static_cast<std::size_t>(steps) * pieces <= runtime::kMaxTagDetail,
               "allreduce: {} elements in pieces of {} bytes need too many messages; raise chunk_bytes", numel,
               options.chunk_bytes);
  const int right = members_[static_cast<std::size_t>(wrap(r + 1, n))];
  const int left = members_[static_cast<std::size_t>(wrap(r - 1, n))];
  std::vector<Work> sends(static_cast<std::size_t>(steps) * pieces);
  std::vector<Work> recvs(static_cast<std::size_t>(steps) * pieces);
  auto at = [pieces](int step, std::size_t piece) { return static_cast<std::size_t>(step) * pieces + piece; };

  run_then_drain(
      [&] {
        for (int g = 0; g < steps; ++g) {
          const int send_segment = wrap(r - g, n);
          const int recv_segment = wrap(r - g - 1, n);
          const Combine combine = g < n - 1 ? Combine::sum : Combine::copy;
          for (std::size_t k = 0; k < pieces; ++k) {
            const Range out = piece_range(numel, n, send_segment, pieces, k);
            const Range in = piece_range(numel, n, recv_segment, pieces, k);
            const runtime::Tag tag = make_tag(TagKind::collective, sequence, static_cast<std::uint32_t>(at(g, k)));
            if (g > 0) recvs[at(g - 1, k)].wait();
            if (out.size() > 0) {
              MutableView piece = data.slice(out.begin, out.size());
              // This worker's segment is complete after the last reduce-scatter step: average it once,
              // before it is sent around in the all-gather.
              if (g == n - 1 && options.op == ReduceOp::avg) scale(piece, 1.0 / n);
              sends[at(g, k)] = ctx_->send(right, tag, piece);
            }
            if (in.size() > 0) {
              if (g + 1 - n >= 0) sends[at(g + 1 - n, k)].wait();
              recvs[at(g, k)] = ctx_->recv(left, tag, data.slice(in.begin, in.size()), combine);
            }
          }
        }
      },
      {&recvs, &sends});
}

// Small messages or slow links: a binomial tree (broadcast_by_tree). Otherwise a
// pipelined chain from the root: the worker at distance d from the root receives each piece from
// distance d-1 and forwards it to distance d+1.
void Communicator::broadcast(MutableView data, int root, std::size_t chunk_bytes) {
  runtime::check_peer(*ctx_, root, "broadcast root");
  FAST_ENFORCE(chunk_bytes > 0, "broadcast: chunk_bytes must be positive");
  const std::uint32_t sequence = next_sequence();
  const auto root_at = std::find(members_.begin(), members_.end(), root);
  FAST_ENFORCE(root_at != members_.end(), "broadcast: root {} is not a member of the group (lost?)", root);
  if (auto* native_ops = native()) return native_ops->broadcast(native_ops->reserve(), data, root);
  const int n = group_size();
  // Nothing to send: every member has the same (empty) length, so all return here. (The sim
  // runtime cannot carry zero-byte messages: their transfers never end.)
  if (n == 1 || data.numel() == 0) return;
  if (broadcast_by_tree(data.bytes(), n, chunk_bytes, network_)) {
    core::Buffer scratch;
    detail::binomial_broadcast({*ctx_, members_, index_, sequence, scratch}, data,
                               static_cast<int>(root_at - members_.begin()));
    return;
  }
  const int distance = wrap(index_ - static_cast<int>(root_at - members_.begin()), n);
  const int prev = members_[static_cast<std::size_t>(wrap(index_ - 1, n))];
  const int next = members_[static_cast<std::size_t>(wrap(index_ + 1, n))];
  const bool forwards = distance < n - 1;
  const std::size_t elem = core::size_of(data.dtype());
  const std::size_t pieces = std::max<std::size_t>(1, (data.numel() * elem + chunk_bytes - 1) / chunk_bytes);
  FAST_ENFORCE(pieces <= runtime::kMaxTagDetail, "broadcast: too many pieces; raise chunk_bytes");
  std::vector<Work> sends;
  sends.reserve(pieces);
  run_then_drain(
      [&] {
        for (std::size_t k = 0; k < pieces; ++k) {
          const Range range = piece_range(data.numel(), 1, 0, pieces, k);
          MutableView piece = data.slice(range.begin, range.size());
          const runtime::Tag tag = make_tag(TagKind::collective, sequence, static_cast<std::uint32_t>(k));
          if (distance > 0) ctx_->recv(prev, tag, piece).wait();
          if (forwards) sends.push_back(ctx_->send(next, tag, piece));
        }
      },
      {&sends});
}

// Bruck's all-gather where its log2 latencies pay (allgather_by_bruck); otherwise the ring (positions
// are group indices): at step s worker r forwards block (r - s) and receives block (r - s - 1).
void Communicator::allgather(core::ConstView in, MutableView out) {
  const std::uint32_t sequence = next_sequence();
  const int n = group_size();
  const int r = index_;
  FAST_ENFORCE(in.dtype() == out.dtype(), "allgather: input is {}, output is {}", core::name_of(in.dtype()),
               core::name_of(out.dtype()));
  FAST_ENFORCE(out.numel() == in.numel() * static_cast<std::size_t>(n),
               "allgather: the output holds {} elements; expected {} (the input's {} for each of the {} members)",
               out.numel(), in.numel() * static_cast<std::size_t>(n), in.numel(), n);
  if (auto* native_ops = native()) return native_ops->allgather(native_ops->reserve(), in, out);
  const std::size_t block = in.numel();
  if (block == 0) return;  // every member's block is empty (see broadcast)
  if (n > 1 && allgather_by_bruck(in.bytes(), n, network_)) {
    ScratchLease scratch(*this);
    return detail::bruck_allgather({*ctx_, members_, index_, sequence, scratch.buffer()}, in, out);
  }
  core::copy(in, out.slice(block * static_cast<std::size_t>(r), block));
  if (n == 1) return;
  std::vector<Work> sends;
  sends.reserve(static_cast<std::size_t>(n));
  run_then_drain(
      [&] {
        for (int s = 0; s < n - 1; ++s) {
          const runtime::Tag tag = make_tag(TagKind::collective, sequence, static_cast<std::uint32_t>(s));
          const auto send_block = static_cast<std::size_t>(wrap(r - s, n));
          const auto recv_block = static_cast<std::size_t>(wrap(r - s - 1, n));
          sends.push_back(ctx_->send(members_[static_cast<std::size_t>(wrap(r + 1, n))], tag,
                                     out.slice(send_block * block, block)));
          ctx_->recv(members_[static_cast<std::size_t>(wrap(r - 1, n))], tag, out.slice(recv_block * block, block))
              .wait();
        }
      },
      {&sends});
}

std::vector<core::Buffer> Communicator::gather(core::ConstView in, int root) {
  runtime::check_peer(*ctx_, root, "gather root");
  FAST_ENFORCE(in.numel() > 0,
               "gather: this member's part is empty (rank {}); expected at least one element from every member "
               "(each part is one message to the root, and the runtime contract has no message of zero elements; "
               "the root, still waiting for it, ends at op_timeout)",
               rank());
  const std::uint32_t sequence = next_sequence();
  const auto root_at = std::find(members_.begin(), members_.end(), root);
  FAST_ENFORCE(root_at != members_.end(), "gather: root {} is not a member of the group (lost?)", root);
  const runtime::Tag tag = make_tag(TagKind::collective, sequence, 0);
  if (root != rank()) {
    ctx_->send(root, tag, in).wait();
    return {};
  }
  std::vector<core::Buffer> out(members_.size());
  std::vector<Work> recvs;
  run_then_drain(
      [&] {
        for (std::size_t i = 0; i < members_.size(); ++i)
          if (members_[i] != rank()) recvs.push_back(ctx_->recv(members_[i], tag, out[i]));
        for (Work& r : recvs) r.wait();
      },
      {&recvs});
  out[static_cast<std::size_t>(index_)] = core::Buffer::copy_of(in);
  for (std::size_t i = 0; i < members_.size(); ++i)
    FAST_ENFORCE(out[i].dtype() == in.dtype(), "gather: member {} sent {}, expected {}", members_[i],
                 core::name_of(out[i].dtype()), core::name_of(in.dtype()));
  return out;
}

void Communicator::alltoall(core::ConstView in, MutableView out) {
  const std::uint32_t sequence = next_sequence();
  const int n = group_size();
  FAST_ENFORCE(in.dtype() == out.dtype(), "alltoall: input is {}, output is {}", core::name_of(in.dtype()),
               core::name_of(out.dtype()));
  FAST_ENFORCE_EQ(out.numel(), in.numel(), "alltoall: input and output must have the same length");
  FAST_ENFORCE(in.numel() % static_cast<std::size_t>(n) == 0,
               "alltoall: the input ({} elements) must hold group_size() = {} equal blocks", in.numel(), n);
  const std::size_t block = in.numel() / static_cast<std::size_t>(n);
  const auto at = [block](int i) { return block * static_cast<std::size_t>(i); };
  core::copy(in.slice(at(index_), block), out.slice(at(index_), block));
  if (n == 1) return;
  const runtime::Tag tag = make_tag(TagKind::collective, sequence, 0);
  std::vector<Work> sends, recvs;
  run_then_drain(
      [&] {
        for (int i = 0; i < n; ++i) {
          if (i == index_) continue;
          recvs.push_back(ctx_->recv(members_[static_cast<std::size_t>(i)], tag, out.slice(at(i), block)));
          sends.push_back(ctx_->send(members_[static_cast<std::size_t>(i)], tag, in.slice(at(i), block)));
        }
        for (Work& r : recvs) r.wait();
      },
      {&sends, &recvs});
}

// Dissemination barrier: in round k worker r signals r + 2^k and waits for r - 2^k; after
// ceil(log2 n) rounds every worker has heard, transitively, from all others.
void Communicator::barrier() {
  const std::uint32_t sequence = next_sequence();
  if (auto* native_ops = native()) return native_ops->barrier(native_ops->reserve());
  const int n = group_size();
  const int r = index_;
  std::uint8_t token = 0;
  std::uint8_t got = 0;
  std::uint32_t round = 0;
  for (int distance = 1; distance < n; distance *= 2, ++round) {
    const runtime::Tag tag = make_tag(TagKind::collective, sequence, round);
    Work sent = ctx_->send(members_[static_cast<std::size_t>(wrap(r + distance, n))], tag,
                           core::ConstView(&token, 1, core::DType::u8));
    ctx_->recv(members_[static_cast<std::size_t>(wrap(r - distance, n))], tag,
               core::MutableView(&got, 1, core::DType::u8))
        .wait();
    sent.wait();
  }
}

}  // namespace fast::collective

namespace fast::collective {

namespace {
// sum[i] = ((in[0][i] + in[1][i]) + in[2][i]) + ...: the additions of a copy of the first message
// followed by a Combine::sum receive of each other one, in that order, so the result is the same
// bits; in blocks that stay in the caches, so that each message and the sum pass through memory
// once (f32 views of sum's length: Context::recv_each_then checked them).
void sum_in_order(std::span<const core::ConstView> in, std::span<float> sum) {
  constexpr std::size_t kBlock = 4096;  // floats: 16 KiB
  std::vector<const float*> messages;
  messages.reserve(in.size());
  for (const core::ConstView& v : in) messages.push_back(v.as<float>().data());
  for (std::size_t at = 0; at < sum.size(); at += kBlock) {
    const std::size_t n = std::min(kBlock, sum.size() - at);
    float* s = sum.data() + at;
    std::copy(messages.front() + at, messages.front() + at + n, s);
    for (std::size_t k = 1; k < messages.size(); ++k) {
      const float* m = messages[k] + at;
      for (std::size_t i = 0; i < n; ++i) s[i] += m[i];
    }
  }
}
}  // namespace

void Communicator::neighbor_average(MutableView data, std::span<const int> in_neighbors,
                                    std::span<const double> in_weights, std::span<const int> out_neighbors,
                                    double self_weight, std::span<float> scratch) {
  FAST_ENFORCE(data.dtype() == core::DType::f32, "neighbor_average: expected f32 data, got {}",
               core::name_of(data.dtype()));
  FAST_ENFORCE_EQ(in_neighbors.size(), in_weights.size(), "neighbor_average: one weight per in-neighbour");
  for (int peer : in_neighbors) runtime::check_peer(*ctx_, peer, "neighbor_average in-neighbour");
  for (int peer : out_neighbors) runtime::check_peer(*ctx_, peer, "neighbor_average out-neighbour");
  const std::span<float> x = data.as<float>();
  if (!scratch.empty()) {
    const std::less<const float*> before;  // a total order, even across unrelated objects
    FAST_ENFORCE(scratch.size() == x.size() && !(before(scratch.data(), x.data() + x.size()) &&
                                                 before(x.data(), scratch.data() + scratch.size())),
                 "neighbor_average: the scratch lent must have data's {} elements and not overlap it (got {})",
                 x.size(), scratch.size());
  }
  const std::uint32_t sequence = next_sequence();
  const runtime::Tag tag = make_tag(TagKind::collective, sequence, 0);
  // The in-neighbours are summed in list order (their senders do not wait for it), so the sums
  // round the same way on every runtime. With one weight w for every in-neighbour (regular graphs
  // under Metropolis-Hastings or uniform weights) the sum goes into one scratch buffer, and data <-
  // self * data + w * sum: where the runtime reads messages in place (sim) in one pass over all of
  // them (Context::recv_each_then), otherwise the first message received into the buffer and the
  // others added to it by the receives themselves (Combine::sum), one after the other. With
  // several weights each is received into a second buffer and added with its weight.
  const bool one_weight =
      std::adjacent_find(in_weights.begin(), in_weights.end(), std::not_equal_to<>()) == in_weights.end();
  // Freed on return, not kept for the next call: between two calls the worker's memory holds its
  // state only (under sim, thousands of workers would each keep a model-sized buffer idle through
  // the final evaluation).
  // The sum is written before it is read (the first receive, or self * x).
  core::Buffer sum_buffer;  // stays empty with a scratch lent: Context::finish_sends_then_write then copies
  core::Buffer incoming;
  if (scratch.empty()) sum_buffer.resize_to_overwrite(data.numel(), core::DType::f32);
  if (!one_weight) incoming.resize_to_overwrite(data.numel(), core::DType::f32);
  const std::span<float> sum = scratch.empty() ? sum_buffer.as<float>() : scratch;
  const MutableView sum_view = scratch.empty() ? sum_buffer.view() : MutableView(sum);
  const auto self = static_cast<float>(self_weight);
  if (!one_weight)
    for (std::size_t i = 0; i < x.size(); ++i) sum[i] = self * x[i];
  std::vector<Work> sends;
  std::vector<Work> recvs;
  sends.reserve(out_neighbors.size());
  run_then_drain(
      [&] {
        for (int peer : out_neighbors) sends.push_back(ctx_->send(peer, tag, data));
        if (one_weight && !in_neighbors.empty() && ctx_->receives_in_place())
          ctx_->recv_each_then(in_neighbors, tag, core::DType::f32, x.size(),
                               [sum](std::span<const core::ConstView> in) { sum_in_order(in, sum); });
        else
          for (std::size_t k = 0; k < in_neighbors.size(); ++k) {
            if (one_weight) {
              recvs.assign(1, ctx_->recv(in_neighbors[k], tag, sum_view,
                                         k == 0 ? runtime::Combine::copy : runtime::Combine::sum));
              recvs.front().wait();
              continue;
            }
            recvs.assign(1, ctx_->recv(in_neighbors[k], tag, incoming.view()));
            recvs.front().wait();
            const auto w = static_cast<float>(in_weights[k]);
            const std::span<const float> other = incoming.as<float>();
            for (std::size_t i = 0; i < x.size(); ++i) sum[i] += w * other[i];
          }
        // x <- self * x + w * sum, self * x without neighbours, or the weighted sum formed above,
        // element by element once the neighbours have read x: in place (out is x), or under sim
        // into the sum buffer (out is sum), which the messages still to be delivered then keep
        // (Context::finish_sends_then_write). With a scratch lent the sum buffer is empty: in
        // place, and such messages keep a copy of x. Each loop names the one buffer it writes, so that it
        // vectorises. This worker's memory only: a computation of no simulated time, beside the
        // other workers' (sim).
        const bool alone = in_weights.empty();
        const float w = one_weight && !alone ? static_cast<float>(in_weights.front()) : 0.0f;
        ctx_->finish_sends_then_write(sends, data, sum_buffer, [x, sum, self, w, one_weight, alone](MutableView o) {
          const std::span<float> out = o.as<float>();
          const bool in_x = out.data() == x.data();
          if (alone) {
            if (in_x)
              for (float& v : out) v *= self;
            else
              for (std::size_t i = 0; i < out.size(); ++i) out[i] = self * x[i];
          } else if (one_weight) {
            if (in_x)
              for (std::size_t i = 0; i < out.size(); ++i) out[i] = self * out[i] + w * sum[i];
            else
              for (std::size_t i = 0; i < out.size(); ++i) out[i] = self * x[i] + w * out[i];
          } else if (in_x) {
            std::copy(sum.begin(), sum.end(), out.begin());
          }
        });
      },
      {&recvs, &sends});
}

}  // namespace fast::collective
