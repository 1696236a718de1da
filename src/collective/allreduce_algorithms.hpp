#pragma once
// The all-reduce algorithms beside the ring (fast/collective/allreduce_algorithm.hpp describes
// them), run by Communicator::allreduce among its group. Private to the collective layer.
//
// Each takes the group (members in rank order, this worker's index), the sequence number the
// Communicator reserved for the call, and the data (f32 or f64, checked by the caller). Tags:
// make_tag(TagKind::collective, sequence, detail), detail = the round (below 64) for the exchanges,
// kFoldDetail and kUnfoldDetail for the folding of non-power-of-two groups. Blocking; on an error
// every operation started is waited for before the error leaves (no memory touched afterwards).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "fast/collective/communicator.hpp"
#include "fast/core/buffer.hpp"
#include "fast/core/tensor_view.hpp"
#include "fast/runtime/context.hpp"

namespace fast::runtime {
class SharedRendezvous;
}

namespace fast::collective::detail {

struct GroupCall {
  runtime::Context& ctx;
  const std::vector<int>& members;  // ranks, in rank order
  int index;                        // this worker's index in members
  std::uint32_t sequence;           // the Communicator's sequence number of this call
  core::Buffer& scratch;            // receive space, owned by the caller for the call; resized here
};

void recursive_doubling_allreduce(const GroupCall& group, core::MutableView data, ReduceOp op);
void halving_doubling_allreduce(const GroupCall& group, core::MutableView data, ReduceOp op);
void tree_allreduce(const GroupCall& group, core::MutableView data, ReduceOp op);

// The sums of `algorithm` (ring, recursive doubling, halving-doubling or tree: the same bits as
// the message path) among every worker of the world, through a rendezvous in their shared address
// space instead of messages (shared_allreduce.cpp): after meet, worker `index` of `n` sums the
// ring's segment `index` (elements [numel index / n, numel (index + 1) / n)) over every worker's
// data, adding in the algorithm's order, scales it for an average, and writes it into every
// worker's data; leave waits until all have written. Two waits, no copies through mailboxes.
// `ticket` was reserved when the call was issued. Arguments that differ between workers (length,
// dtype, op, algorithm) fail every worker with InvalidArgument naming both. Link statistics count
// the messages the message path would have sent (for_each_message; chunk_bytes: the ring's
// pieces). scratch: n blocks of up to 1024 elements (at most 1 MiB). n >= 2.
void shared_allreduce(runtime::SharedRendezvous& rendezvous, std::uint64_t ticket, int index, int n,
                      AllreduceAlgorithm algorithm, core::MutableView data, ReduceOp op, std::size_t chunk_bytes,
                      core::Buffer& scratch);

// The messages `algorithm` sends from member `index` of `n` for numel elements of elem_bytes each
// (chunk_bytes: the ring's pieces): sent(to_index, bytes) once per message, in no particular order.
// The shared path counts them so that link statistics read the same either way.
void for_each_message(AllreduceAlgorithm algorithm, int index, int n, std::size_t numel, std::size_t elem_bytes,
                      std::size_t chunk_bytes, const std::function<void(int to_index, std::size_t bytes)>& sent);

// Bruck's all-gather: ceil(log2 n) rounds; in round k each member sends the first min(2^k, n - 2^k)
// blocks it holds to the member 2^k before it and receives as many from the member 2^k after it.
// Any dtype; out.numel() == n * in.numel(). Tags: detail = round.
void bruck_allgather(const GroupCall& group, core::ConstView in, core::MutableView out);
// Binomial-tree broadcast from the member at index root_index: ceil(log2 n) rounds of whole-vector
// messages (the chain in Communicator::broadcast pipelines pieces through n-1 hops instead).
// Tags: detail = kBroadcastDetail + round.
void binomial_broadcast(const GroupCall& group, core::MutableView data, int root_index);

}  // namespace fast::collective::detail
