#include "world_state.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "transport.hpp"

namespace fast::runtime::engine {

WorldState::WorldState(WorldShape shape, double op_timeout_seconds, std::string runtime_name, Transport* transport)
    : shape_(shape),
      op_timeout_(op_timeout_seconds),
      runtime_name_(std::move(runtime_name)),
      transport_(transport),
      start_(std::chrono::steady_clock::now()) {
  if (transport_ != nullptr && transport_->polls_in_caller()) {
    polls_in_caller_ = true;
    poll_budget_ = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(transport_->poll_budget()));
  }
}

void WorldState::sleep_begin(Transport& t) { t.sleep_begin(); }
void WorldState::sleep_end(Transport& t) { t.sleep_end(); }
void WorldState::poll_once(Transport& t) { t.poll(); }
bool WorldState::transport_spins() const { return transport_->spin_pays(); }
bool WorldState::transport_receiving() const { return transport_->receiving(); }

double WorldState::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void WorldState::wake_transport() const { transport_->progress_wanted(); }

bool WorldState::spin_pays() const noexcept {
  if (transport_ != nullptr) return false;
  static const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(local_size() + activities()) <= cores;
}

void WorldState::abort(int rank, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_.load(std::memory_order_relaxed)) return;
  message_ = fmt::format("worker {} failed: {}", rank, reason);
  aborted_.store(true, std::memory_order_release);
}

void WorldState::abort_with(const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_.load(std::memory_order_relaxed)) return;
  message_ = message;
  aborted_.store(true, std::memory_order_release);
}

std::string WorldState::abort_message() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return message_;
}

}  // namespace fast::runtime::engine
