#pragma once
// A worker's Context that forwards every call to the one it wraps, for tests that change one
// answer of a runtime (derive and override it): whether it joins a run under way, what a message
// between two workers costs. The wrapped Context must outlive it. Thread-safety: the wrapped one's.
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fast/runtime/context.hpp"

namespace fast::test {

class ForwardingContext : public runtime::Context {
 public:
  explicit ForwardingContext(runtime::Context& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  int local_size() const override { return inner_.local_size(); }
  double now() const override { return inner_.now(); }
  void sleep(double seconds) override { inner_.sleep(seconds); }
  void compute(double flops) override { inner_.compute(flops); }
  void compute_overlapped(double flops, const std::function<void()>& work) override {
    inner_.compute_overlapped(flops, work);
  }
  void memory_traffic(double bytes) override { inner_.memory_traffic(bytes); }
  core::Work send(int peer, runtime::Tag tag, core::ConstView data) override { return inner_.send(peer, tag, data); }
  core::Work recv(int peer, runtime::Tag tag, core::MutableView dst, runtime::Combine combine) override {
    return inner_.recv(peer, tag, dst, combine);
  }
  core::Work recv(int peer, runtime::Tag tag, core::Buffer& out) override { return inner_.recv(peer, tag, out); }
  core::Work recv_any(runtime::Tag tag, core::Buffer& out, int& source) override {
    return inner_.recv_any(tag, out, source);
  }
  std::optional<std::size_t> try_recv(int peer, runtime::Tag tag, core::MutableView dst,
                                      runtime::Combine combine) override {
    return inner_.try_recv(peer, tag, dst, combine);
  }
  void recv_each_then(std::span<const int> peers, runtime::Tag tag, core::DType dtype, std::size_t numel,
                      const ReduceReceived& reduce) override {
    inner_.recv_each_then(peers, tag, dtype, numel, reduce);
  }
  bool receives_in_place() const override { return inner_.receives_in_place(); }
  void finish_sends_then_write(std::vector<core::Work>& sends, core::MutableView data, core::Buffer& scratch,
                               const ElementWrite& write) override {
    inner_.finish_sends_then_write(sends, data, scratch, write);
  }
  core::Work spawn(std::string name, std::function<void()> fn) override {
    return inner_.spawn(std::move(name), std::move(fn));
  }
  std::unique_ptr<runtime::Mutex> make_mutex() override { return inner_.make_mutex(); }
  std::unique_ptr<runtime::CondVar> make_condvar() override { return inner_.make_condvar(); }
  runtime::LinkStats link_stats(int peer) const override { return inner_.link_stats(peer); }
  std::string runtime_name() const override { return inner_.runtime_name(); }
  double operation_time_limit() const override { return inner_.operation_time_limit(); }
  bool alive(int peer) const override { return inner_.alive(peer); }
  void ensure_alive(int peer) const override { inner_.ensure_alive(peer); }
  void settle_lost_peers() override { inner_.settle_lost_peers(); }
  bool joins_run_under_way() const override { return inner_.joins_run_under_way(); }
  std::vector<runtime::MembershipEvent> membership_events() const override { return inner_.membership_events(); }
  // The capabilities too: every worker's Communicator must choose the same paths.
  runtime::NativeCollectives* native_collectives() override { return inner_.native_collectives(); }
  runtime::SharedRendezvous* shared_rendezvous() override { return inner_.shared_rendezvous(); }
  runtime::RemoteMemory* remote_memory() override { return inner_.remote_memory(); }
  std::optional<runtime::NetworkModel> network_model() const override { return inner_.network_model(); }
  std::optional<runtime::NetworkModel> pair_network_model(int a, int b) const override {
    return inner_.pair_network_model(a, b);
  }

 private:
  runtime::Context& inner_;
};

}  // namespace fast::test
