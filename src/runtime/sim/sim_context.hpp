#pragma once
// Context of one worker of the sim runtime. Its main activity and every spawned activity are
// SimGrid actors on the worker's simulated host; compute() executes flops on that host, sleep()
// and every wait let simulated time pass, now() reads SimGrid's clock (from the run's start).

#include <simgrid/s4u/ConditionVariable.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Mutex.hpp>

#include <memory>
#include <vector>

#include "fast/runtime/context.hpp"
#include "op.hpp"

namespace fast::runtime::sim {

class WorldState;

class SimContext final : public Context {
 public:
  SimContext(int rank, WorldState& world);

  int rank() const override { return rank_; }
  int size() const override;
  double now() const override;
  void sleep(double seconds) override;
  void compute(double flops) override;
  // With a compute pool (WorldState::compute_pool): work() on a pool thread during the simulated
  // execution of flops; without one: work() then compute(flops). With no flops, a yield stands for
  // the execution (the other actors of the instant run meanwhile), with or without a pool.
  void compute_overlapped(double flops, const std::function<void()>& work) override;
  void memory_traffic(double bytes) override;

  core::Work send(int peer, Tag tag, core::ConstView data) override;
  // Into a receive posted before it, the bytes move at once and the buffer goes (op.hpp:
  // deliver_early); otherwise the message holds the buffer until it is delivered.
  core::Work send_owned(int peer, Tag tag, std::shared_ptr<const core::Buffer> data) override;
  core::Work recv(int peer, Tag tag, core::MutableView dst, Combine combine) override;
  core::Work recv(int peer, Tag tag, core::Buffer& out) override;
  core::Work recv_any(Tag tag, core::Buffer& out, int& source) override;
  std::optional<std::size_t> try_recv(int peer, Tag tag, core::MutableView dst, Combine combine) override;
  // The messages are read where they are (op.hpp: read_held), nothing copied.
  void recv_each_then(std::span<const int> peers, Tag tag, core::DType dtype, std::size_t numel,
                      const ReduceReceived& reduce) override;
  bool receives_in_place() const override { return true; }
  // Lends `scratch` to the messages of `sends` that still need the content sent (Payload::keep).
  void finish_sends_then_write(std::vector<core::Work>& sends, core::MutableView data, core::Buffer& scratch,
                               const ElementWrite& write) override;

  core::Work spawn(std::string name, std::function<void()> fn) override;
  std::unique_ptr<Mutex> make_mutex() override;
  std::unique_ptr<CondVar> make_condvar() override;

  LinkStats link_stats(int peer) const override;
  std::string runtime_name() const override { return "sim"; }
  double operation_time_limit() const override;
  bool alive(int peer) const override;
  void ensure_alive(int peer) const override;
  std::optional<NetworkModel> network_model() const override;
  std::vector<MembershipEvent> membership_events() const override { return world_.losses_as_events(); }

 private:
  core::Work post_recv(std::shared_ptr<RecvOp> op);
  // A send's failure before it starts: a lost peer's PeerLost as a failed Work (null: none);
  // throws when this worker is lost.
  std::optional<core::Work> refuse_send(int peer, Tag tag, const char* what);
  // Counts, starts the transfer of and posts a message of `payload`; its Work.
  std::shared_ptr<SendWork> start_send(int peer, Tag tag, std::shared_ptr<Payload> payload);
  void simulate_work(double flops);
  void check_alive(const char* what) const;
  std::shared_ptr<Payload> payload_of(core::ConstView data);
  std::shared_ptr<Payload> payload_of_sends(const std::vector<core::Work>& sends, core::ConstView data);

  int rank_;
  WorldState& world_;
  LinkCounterTable counters_;
  // This worker's last send while its Work is held, and the memory it was copied from (payload_of).
  std::weak_ptr<SendWork> last_send_;
  const void* last_source_ = nullptr;
  simgrid::s4u::MutexPtr sleep_mutex_;  // sleep(): a wait a loss can end
  simgrid::s4u::ConditionVariablePtr sleep_cv_;
};

}  // namespace fast::runtime::sim
