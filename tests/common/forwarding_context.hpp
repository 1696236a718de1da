#pragma once
// A worker's Context that forwards every call to the one it wraps, for tests that change one
// answer of a runtime (derive and override it): whether it joins a run under way, what a message
// between two workers costs. The wrapped Context must outlive it. Thread-safety: the wrapped one's.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "fast/runtime/context.hpp"

namespace fast::test {

class ForwardingContext : public runtime::Context {
 public:
  explicit ForwardingContext(runtime::Context& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  double now() const override { return inner_.now(); }
  void sleep(double seconds) override { inner_.sleep(seconds); }
  void compute(double flops) override { inner_.compute(flops); }
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
  core::Work spawn(std::string name, std::function<void()> fn) override {
    return inner_.spawn(std::move(name), std::move(fn));
  }
  std::unique_ptr<runtime::Mutex> make_mutex() override { return inner_.make_mutex(); }
  std::unique_ptr<runtime::CondVar> make_condvar() override { return inner_.make_condvar(); }
  runtime::LinkStats link_stats(int peer) const override { return inner_.link_stats(peer); }
  std::string runtime_name() const override { return inner_.runtime_name(); }
  bool joins_run_under_way() const override { return inner_.joins_run_under_way(); }
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
