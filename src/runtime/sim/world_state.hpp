#pragma once
// Shared state of one run of a sim World: the workers' hosts, the abort flag and reason, which
// workers were lost (their host turned off) and when, the clock origin, the operation time limit
// and every condition variable a blocked activity may sleep on (woken on abort or loss).
//
// Not locked: SimGrid runs one actor at a time (contexts/nthreads = 1), so everything here is
// only touched between two simcalls of the running actor; but request_interrupt, from any thread.

#include <simgrid/s4u/ConditionVariable.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fast/runtime/context.hpp"
#include "fast/runtime/network_model.hpp"

namespace fast::runtime::sim {

class Inbox;
class ComputePool;

class WorldState {
 public:
  WorldState(std::vector<simgrid::s4u::Host*> hosts, double op_timeout_seconds, double start_clock);
  ~WorldState();

  int size() const noexcept { return static_cast<int>(hosts_.size()); }
  double op_timeout() const noexcept { return op_timeout_; }
  // Bytes per second one core streams through memory (Cluster::memory_bandwidth; 0: free).
  double memory_bandwidth() const noexcept { return memory_bandwidth_; }
  void set_memory_bandwidth(double bytes_per_second) noexcept { memory_bandwidth_ = bytes_per_second; }
  // The threads that run the workers' computations (SimContext::compute_overlapped), or null: they
  // run inline. Not owned; set before the actors start.
  ComputePool* compute_pool() const noexcept { return compute_pool_; }
  void set_compute_pool(ComputePool* pool) noexcept { compute_pool_ = pool; }
  // Simulated seconds since the run started.
  double now() const;
  simgrid::s4u::Host* host(int rank) const { return hosts_[static_cast<std::size_t>(rank)]; }
  Inbox& inbox(int rank) { return *inboxes_[static_cast<std::size_t>(rank)]; }

  // The network between the workers' hosts: the largest latency and the smallest bandwidth of the
  // routes from worker 0 to up to 64 others, and from the last worker to worker 0 (computed once,
  // on first use). Loopback when every worker shares one host.
  const NetworkModel& network_model();

  bool aborted() const noexcept { return aborted_; }
  // First call wins: records why and which rank failed, then wakes every waiter.
  void abort(int rank, const std::string& reason);
  // "worker 2 failed: <reason>".
  const std::string& abort_message() const noexcept { return message_; }
  // From any thread (runtime::interrupt_launches): the next runtime call of any worker aborts the
  // world with `message` (take_interrupt), which wakes every waiter.
  void request_interrupt(const std::string& message);
  // From the running actor: aborts the world if an interrupt was requested. Cheap when none was.
  void take_interrupt();

  // Marks `rank` lost at the current time, cancels its running computations and wakes every
  // waiter: operations of others with it fail with PeerLost, and its own activities, woken, throw
  // PeerLost (naming itself) from their next runtime call, so they end by unwinding normally.
  void lose(int rank, const std::string& why);
  // The computations `rank` runs now (compute()), cancelled when it is lost.
  void add_running(int rank, const simgrid::s4u::ExecPtr& exec);
  void remove_running(int rank, const simgrid::s4u::ExecPtr& exec);
  bool lost(int rank) const { return lost_[static_cast<std::size_t>(rank)]; }
  // Marks `rank` ended (its worker function returned) and wakes every waiter: it sends nothing
  // more, so a receive from it that no message of it matched fails with PeerLost, and alive()
  // turns false for it, as for a process that ended under zmq. Not a loss (lost(), losses()).
  void end(int rank);
  bool ended(int rank) const { return ended_[static_cast<std::size_t>(rank)]; }
  // "worker 2 (host host-2) ended its run at 1.5 s (simulated)".
  std::string ended_message(int rank) const;
  // Number of workers lost so far (a timed any-source wait returns early when it changes).
  std::uint64_t losses() const noexcept { return losses_; }
  // "worker 2 (host host-2) was lost at 1.5 s (simulated): host turned off".
  std::string lost_message(int rank) const;
  // Every worker lost so far, in rank order, as Context::membership_events reports them: the
  // instant on the run's clock (now()) and "host host-2: host host-2 turned off".
  std::vector<MembershipEvent> losses_as_events() const;

  // Remembers a condition variable to wake on abort or loss (kept alive by the world).
  void watch(simgrid::s4u::ConditionVariablePtr cv) { watched_.push_back(std::move(cv)); }
  void wake_all();

 private:
  std::vector<simgrid::s4u::Host*> hosts_;
  std::vector<std::unique_ptr<Inbox>> inboxes_;
  std::optional<NetworkModel> network_;
  double op_timeout_;
  double memory_bandwidth_ = 0;
  ComputePool* compute_pool_ = nullptr;
  double start_;
  bool aborted_ = false;
  std::string message_;
  std::atomic<bool> interrupted_{false};
  std::mutex interrupt_mutex_;  // guards interrupt_message_
  std::string interrupt_message_;
  std::vector<bool> lost_;
  std::vector<bool> ended_;
  std::vector<double> ended_at_;
  std::uint64_t losses_ = 0;
  std::vector<double> lost_at_;
  std::vector<std::string> lost_why_;
  std::vector<std::vector<simgrid::s4u::ExecPtr>> running_;
  std::vector<simgrid::s4u::ConditionVariablePtr> watched_;
};

}  // namespace fast::runtime::sim
