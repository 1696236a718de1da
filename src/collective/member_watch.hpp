#pragma once
// MemberWatch: the Context an elastic Communicator (CommunicatorOptions::elastic) runs its
// collectives on. It forwards every call to the worker's own Context, and the Work of every send,
// receive and spawned activity it returns fails with PeerLost as soon as ANY member of the
// Communicator's group is lost, not only the peer it waits for. A collective thus ends on every
// survivor within about the runtime's loss detection (zmq: the peer timeout) plus one polling
// slice, wherever each one waits: a ring neighbour that waits for a survivor that itself waits for
// the lost worker would otherwise wait until the operation time limit. The survivors then agree on
// the new group (collective/membership.hpp).
//
// Waits poll: the inner Work is waited for in slices of kSlice seconds (runtime clock), and between
// slices every member is checked with Context::alive. A wait without a limit still ends with
// TimeoutError at the runtime's operation time limit (Context::operation_time_limit).
//
// Ownership: holds a reference to the inner Context and to the Communicator's member list, both of
// which must outlive it (the Communicator owns it). Thread-safety: that of the inner Context; the
// member list is read by waits and changed only between collectives (Communicator::regroup), by the
// worker's main activity.

#include <functional>
#include <memory>
#include <vector>

#include "fast/runtime/context.hpp"

namespace fast::collective::detail {

class MemberWatch final : public runtime::Context {
 public:
  // Seconds of runtime clock between two checks of the members while a wait is blocked.
  static constexpr double kSlice = 0.02;

  // `formed_at`: when the group was formed (now() seconds): a member lost since then is lost even
  // when a new process has taken its rank back meanwhile (runtime::lost_since).
  MemberWatch(runtime::Context& inner, const std::vector<int>& members, const double& formed_at)
      : inner_(inner), members_(members), formed_at_(formed_at) {}

  runtime::Context& inner() noexcept { return inner_; }
  // A testing aid (fault injection): the next send() waits until its message left (at most the
  // operation time limit), then calls `then` once, before it returns (`then` may end the process).
  void after_next_send(std::function<void()> then) { after_next_send_ = std::move(then); }
  // PeerLost naming the first member (in rank order) that is lost, if one is; `what` is the
  // operation that noticed it.
  void check_members(const char* what) const;

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
  core::Work send(int peer, runtime::Tag tag, core::ConstView data) override;
  core::Work recv(int peer, runtime::Tag tag, core::MutableView dst,
                  runtime::Combine combine = runtime::Combine::copy) override;
  core::Work recv(int peer, runtime::Tag tag, core::Buffer& out) override;
  core::Work recv_any(runtime::Tag tag, core::Buffer& out, int& source) override;
  std::optional<std::size_t> try_recv(int peer, runtime::Tag tag, core::MutableView dst,
                                      runtime::Combine combine = runtime::Combine::copy) override;
  // `sends` are this class's watched Works: the inner Context waits through them.
  void finish_sends_then_write(std::vector<core::Work>& sends, core::MutableView data, core::Buffer& scratch,
                               const ElementWrite& write) override {
    inner_.finish_sends_then_write(sends, data, scratch, write);
  }
  core::Work spawn(std::string name, std::function<void()> fn) override;
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
  // None of the shortcuts that bypass messages: an elastic group runs its collectives on messages,
  // whose waits this class can watch.
  runtime::NativeCollectives* native_collectives() override { return nullptr; }
  runtime::SharedRendezvous* shared_rendezvous() override { return nullptr; }
  runtime::RemoteMemory* remote_memory() override { return nullptr; }
  std::optional<runtime::NetworkModel> network_model() const override { return inner_.network_model(); }
  std::optional<runtime::NetworkModel> pair_network_model(int a, int b) const override {
    return inner_.pair_network_model(a, b);
  }

 private:
  core::Work watched(core::Work work);

  runtime::Context& inner_;
  const std::vector<int>& members_;
  const double& formed_at_;
  std::function<void()> after_next_send_;  // after_next_send(); empty: none
};

}  // namespace fast::collective::detail
