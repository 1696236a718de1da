#include "world_state.hpp"

#include <simgrid/s4u/Engine.hpp>

#include <simgrid/s4u/Link.hpp>

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "mailbox.hpp"
#include "sim_sync.hpp"

namespace fast::runtime::sim {

WorldState::WorldState(std::vector<simgrid::s4u::Host*> hosts, double op_timeout_seconds, double start_clock)
    : hosts_(std::move(hosts)),
      op_timeout_(op_timeout_seconds),
      start_(start_clock),
      lost_(hosts_.size(), false),
      ended_(hosts_.size(), false),
      ended_at_(hosts_.size(), 0.0),
      lost_at_(hosts_.size(), 0.0),
      lost_why_(hosts_.size()),
      running_(hosts_.size()) {
  for (std::size_t r = 0; r < hosts_.size(); ++r) inboxes_.push_back(std::make_unique<Inbox>(*this));
}

WorldState::~WorldState() = default;

namespace {
// Latency and bandwidth of the route from a to b (bandwidth: its slowest link).
NetworkModel route_model(simgrid::s4u::Host* a, simgrid::s4u::Host* b) {
  std::vector<simgrid::s4u::Link*> links;
  double latency = 0;
  a->route_to(b, links, &latency);
  double bandwidth = std::numeric_limits<double>::infinity();
  for (const simgrid::s4u::Link* link : links) bandwidth = std::min(bandwidth, link->get_bandwidth());
  if (links.empty()) bandwidth = 1e12;  // a route without links costs nothing but its latency
  return {.latency_seconds = latency, .bandwidth_bytes_per_second = bandwidth};
}
}  // namespace

const NetworkModel& WorldState::network_model() {
  if (network_) return *network_;
  NetworkModel worst{.latency_seconds = 0, .bandwidth_bytes_per_second = std::numeric_limits<double>::infinity()};
  bool any = false;
  auto consider = [&](std::size_t a, std::size_t b) {
    if (hosts_[a] == hosts_[b]) return;
    const NetworkModel m = route_model(hosts_[a], hosts_[b]);
    worst.latency_seconds = std::max(worst.latency_seconds, m.latency_seconds);
    worst.bandwidth_bytes_per_second = std::min(worst.bandwidth_bytes_per_second, m.bandwidth_bytes_per_second);
    any = true;
  };
  const std::size_t n = hosts_.size();
  for (std::size_t k = 1; k < n && k <= 64; ++k) consider(0, k);
  if (n > 1) consider(n - 1, 0);
  if (!any) worst = route_model(hosts_[0], hosts_[0]);
  network_ = worst;
  return *network_;
}

double WorldState::now() const { return simgrid::s4u::Engine::get_clock() - start_; }

void WorldState::abort(int rank, const std::string& reason) {
  if (aborted_) return;
  message_ = fmt::format("worker {} failed: {}", rank, reason);
  aborted_ = true;
  wake_all();
}

void WorldState::request_interrupt(const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(interrupt_mutex_);
    interrupt_message_ = message;
  }
  interrupted_.store(true, std::memory_order_release);
}

void WorldState::take_interrupt() {
  if (!interrupted_.load(std::memory_order_acquire) || aborted_) return;
  std::lock_guard<std::mutex> lock(interrupt_mutex_);
  message_ = interrupt_message_;
  aborted_ = true;
  wake_all();
}

void WorldState::lose(int rank, const std::string& why) {
  const auto r = static_cast<std::size_t>(rank);
  if (lost_[r]) return;
  lost_[r] = true;
  ++losses_;
  lost_at_[r] = now();
  lost_why_[r] = why;
  for (const auto& exec : running_[r]) {
    KeepCaughtExceptions keep;
    exec->cancel();
  }
  wake_all();
}

void WorldState::end(int rank) {
  const auto r = static_cast<std::size_t>(rank);
  ended_[r] = true;
  ended_at_[r] = now();
  wake_all();
}

std::string WorldState::ended_message(int rank) const {
  const auto r = static_cast<std::size_t>(rank);
  return fmt::format("worker {} (host {}) ended its run at {:.6g} s (simulated)", rank, hosts_[r]->get_name(),
                     ended_at_[r]);
}

void WorldState::add_running(int rank, const simgrid::s4u::ExecPtr& exec) {
  running_[static_cast<std::size_t>(rank)].push_back(exec);
}

void WorldState::remove_running(int rank, const simgrid::s4u::ExecPtr& exec) {
  auto& v = running_[static_cast<std::size_t>(rank)];
  v.erase(std::remove(v.begin(), v.end(), exec), v.end());
}

std::string WorldState::lost_message(int rank) const {
  const auto r = static_cast<std::size_t>(rank);
  return fmt::format("worker {} (host {}) was lost at {:.6g} s (simulated): {}", rank, hosts_[r]->get_name(),
                     lost_at_[r], lost_why_[r]);
}

std::vector<MembershipEvent> WorldState::losses_as_events() const {
  std::vector<MembershipEvent> events;
  for (std::size_t r = 0; r < lost_.size(); ++r)
    if (lost_[r])
      events.push_back({.at = lost_at_[r],
                        .worker = static_cast<int>(r),
                        .detail = fmt::format("host {}: {}", hosts_[r]->get_name(), lost_why_[r])});
  return events;
}

void WorldState::wake_all() {
  for (auto& box : inboxes_) box->wake();
  for (auto& cv : watched_) {
    KeepCaughtExceptions keep;
    cv->notify_all();
  }
}

}  // namespace fast::runtime::sim
