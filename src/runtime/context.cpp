#include "fast/runtime/context.hpp"

#include <utility>
#include <vector>

#include "deliver.hpp"
#include "fast/core/env.hpp"
#include "fast/runtime/environment.hpp"
#include "fast/runtime/successor.hpp"

namespace fast::runtime {

std::uint64_t Context::bytes_sent() const {
  std::uint64_t total = 0;
  for (int p = 0; p < size(); ++p)
    if (p != rank()) total += link_stats(p).bytes_sent;  // a message to itself crosses no link
  return total;
}

double Context::operation_time_limit() const { return core::env_number(runtime_environment(), "FAST_OP_TIMEOUT"); }

core::Work Context::send_owned(int peer, Tag tag, std::shared_ptr<const core::Buffer> data) {
  FAST_ENFORCE_AS(core::InvalidArgument, data != nullptr, "send_owned to rank {} (tag {:#x}): no buffer", peer, tag);
  std::vector<core::Work> sent;
  sent.push_back(send(peer, tag, data->view()));
  return core::Work::all(std::move(sent), std::move(data));
}

void Context::compute_overlapped(double flops, const std::function<void()>& work) {
  work();
  compute(flops);
}

void Context::finish_sends_then_write(std::vector<core::Work>& sends, core::MutableView data, core::Buffer& scratch,
                                      const ElementWrite& write) {
  FAST_ENFORCE(scratch.numel() == 0 || (scratch.dtype() == data.dtype() && scratch.numel() == data.numel()),
               "finish_sends_then_write: scratch has {} {} elements, data {} {}", scratch.numel(),
               core::name_of(scratch.dtype()), data.numel(), core::name_of(data.dtype()));
  core::wait_all(sends);
  compute_overlapped(0, [&] { write(data); });
}

void Context::recv_each_then(std::span<const int> peers, Tag tag, core::DType dtype, std::size_t numel,
                             const ReduceReceived& reduce) {
  for (int peer : peers) check_peer(*this, peer, "recv_each_then");
  std::vector<core::Buffer> buffers(peers.size());
  std::vector<core::Work> receives;
  receives.reserve(peers.size());
  for (std::size_t k = 0; k < peers.size(); ++k) receives.push_back(recv(peers[k], tag, buffers[k]));
  core::wait_all(receives);
  std::vector<core::ConstView> received;
  received.reserve(peers.size());
  for (std::size_t k = 0; k < peers.size(); ++k) {
    detail::check_received(buffers[k].view(), dtype, numel, peers[k], rank(), tag);
    received.push_back(std::as_const(buffers[k]).view());
  }
  compute_overlapped(0, [&] { reduce(received); });
}

void check_peer(const Context& ctx, int peer, const char* what) {
  FAST_ENFORCE(peer >= 0 && peer < ctx.size(), "{}: rank {} is not a worker of this world; expected one in [0, {})",
               what, peer, ctx.size());
}

bool lost_since(const Context& ctx, int peer, double since) {
  if (!ctx.alive(peer)) return true;
  for (const MembershipEvent& e : ctx.membership_events())
    if (e.worker == peer && !e.joined && !e.before_join && e.at >= since) return true;
  return false;
}

bool ever_lost(const Context& ctx, int peer) {
  if (!ctx.alive(peer)) return true;
  for (const MembershipEvent& e : ctx.membership_events())
    if (e.worker == peer && !e.joined) return true;
  return false;
}

int successor(const Context& ctx, int holder) {
  for (int step = 1; step < ctx.size(); ++step) {
    const int rank = (holder + step) % ctx.size();
    if (!ever_lost(ctx, rank)) return rank;
  }
  return -1;
}

}  // namespace fast::runtime
