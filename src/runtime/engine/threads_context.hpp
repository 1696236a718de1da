#pragma once
// Context of one worker of the threads runtime.

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "fast/runtime/context.hpp"
#include "op.hpp"

namespace fast::runtime::engine {

class Mailbox;
class SharedBoard;
class WorldState;

// Threads started by spawn(), joined by the World when the run ends. Thread-safe.
class ActivityList {
 public:
  void add(std::thread t);
  void join_all();

 private:
  std::mutex mutex_;
  std::vector<std::thread> threads_;
};

class ThreadsContext final : public Context {
 public:
  // board: the world's SharedBoard when every worker lives in this process, else null.
  ThreadsContext(int rank, WorldState& world, std::vector<std::unique_ptr<Mailbox>>& mailboxes,
                 ActivityList& activities, SharedBoard* board = nullptr);

  int rank() const override { return rank_; }
  int size() const override;
  int local_size() const override;
  double now() const override;
  void sleep(double seconds) override;
  void compute(double /*flops*/) override {}

  core::Work send(int peer, Tag tag, core::ConstView data) override;
  core::Work recv(int peer, Tag tag, core::MutableView dst, Combine combine) override;
  core::Work recv(int peer, Tag tag, core::Buffer& out) override;
  core::Work recv_any(Tag tag, core::Buffer& out, int& source) override;
  std::optional<std::size_t> try_recv(int peer, Tag tag, core::MutableView dst, Combine combine) override;

  core::Work spawn(std::string name, std::function<void()> fn) override;
  std::unique_ptr<Mutex> make_mutex() override;
  std::unique_ptr<CondVar> make_condvar() override;

  LinkStats link_stats(int peer) const override;
  std::string runtime_name() const override;
  double operation_time_limit() const override;
  bool alive(int peer) const override;
  void ensure_alive(int peer) const override;
  void settle_lost_peers() override;
  bool joins_run_under_way() const override;
  std::vector<MembershipEvent> membership_events() const override;
  NativeCollectives* native_collectives() override;
  SharedRendezvous* shared_rendezvous() override;
  RemoteMemory* remote_memory() override;
  std::optional<NetworkModel> pair_network_model(int a, int b) const override;

 private:
  core::Work post_recv(std::shared_ptr<struct Op> op);
  Mailbox& own_mailbox() const;

  int rank_;
  WorldState& world_;
  std::vector<std::unique_ptr<Mailbox>>& mailboxes_;
  ActivityList& activities_;
  SharedBoard* board_;
  std::unique_ptr<LinkCounters[]> counters_;
};

}  // namespace fast::runtime::engine
