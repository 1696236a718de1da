#include "shared_board.hpp"

#include <chrono>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/runtime/time_limit.hpp"
#include "op.hpp"
#include "world_state.hpp"

namespace fast::runtime::engine {

SharedBoard::SharedBoard(WorldState& world)
    : world_(world),
      n_(static_cast<std::uint64_t>(world.size())),
      published_(static_cast<std::size_t>(world.size())),
      counters_(static_cast<std::size_t>(world.size()), nullptr) {
  seats_.reserve(published_.size());
  for (int r = 0; r < world.size(); ++r) seats_.push_back(std::make_unique<Seat>(*this, r));
}

void SharedBoard::notify() {
  // seq_cst on both sides (here after the counter's update, in wait_until after sleepers_'s):
  // either the sleeper sees the new value before it sleeps, or this sees the sleeper.
  if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
  { std::lock_guard<std::mutex> lock(mutex_); }
  cv_.notify_all();
}

void SharedBoard::arrive() {
  arrivals_.fetch_add(1, std::memory_order_seq_cst);
  notify();
}

template <typename Pred>
void SharedBoard::wait_until(Pred pred, const char* what, int rank, std::uint64_t ticket) {
  using clock = std::chrono::steady_clock;
  if (world_.poll_before_blocking(pred)) return;
  const WorldState::BlockingScope blocking(world_);
  // Named as the user meets it: worker R's T-th collective among the workers of this process.
  const auto wait = [&] { return fmt::format("worker {}'s collective {} (waiting for {})", rank, ticket, what); };
  const auto deadline =
      clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(world_.op_timeout()));
  std::unique_lock<std::mutex> lock(mutex_);
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  for (;;) {
    if (pred()) break;
    if (world_.aborted()) {
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      throw core::RemoteError(fmt::format("{} abandoned: {}", wait(), world_.abort_message()));
    }
    const auto now = clock::now();
    if (now >= deadline) {
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      throw core::TimeoutError(time_limit_message(wait(), world_.op_timeout()));
    }
    cv_.wait_until(lock, std::min(deadline, now + std::chrono::milliseconds(50)));
  }
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
}

void* const* SharedBoard::Seat::meet(std::uint64_t ticket, void* mine) {
  SharedBoard& b = board_;
  b.wait_until([&] { return finished_.load(std::memory_order_seq_cst) == ticket; }, "its previous collective to end",
               rank_, ticket);
  b.published_[static_cast<std::size_t>(rank_)] = mine;
  b.arrive();
  const std::uint64_t all_in = b.n_ * (2 * ticket + 1);
  b.wait_until([&] { return b.arrivals_.load(std::memory_order_seq_cst) >= all_in; }, "every worker to arrive", rank_,
               ticket);
  return b.published_.data();
}

void SharedBoard::Seat::leave(std::uint64_t ticket) {
  SharedBoard& b = board_;
  b.arrive();
  const std::uint64_t all_out = b.n_ * (2 * ticket + 2);
  b.wait_until([&] { return b.arrivals_.load(std::memory_order_seq_cst) >= all_out; }, "every worker to finish reading",
               rank_, ticket);
  finished_.store(ticket + 1, std::memory_order_seq_cst);
  b.notify();  // another activity of this worker may wait for its turn
}

void SharedBoard::Seat::count_as_sent(int peer, std::uint64_t bytes, std::uint64_t messages) {
  FAST_ENFORCE(peer >= 0 && static_cast<std::uint64_t>(peer) < board_.n_ && peer != rank_,
               "count_as_sent: peer {} is not another rank of {}", peer, board_.n_);
  LinkCounters& out = board_.counters_[static_cast<std::size_t>(rank_)][peer];
  LinkCounters& in = board_.counters_[static_cast<std::size_t>(peer)][rank_];
  out.bytes_sent.fetch_add(bytes, std::memory_order_relaxed);
  out.messages_sent.fetch_add(messages, std::memory_order_relaxed);
  in.bytes_received.fetch_add(bytes, std::memory_order_relaxed);
  in.messages_received.fetch_add(messages, std::memory_order_relaxed);
}

}  // namespace fast::runtime::engine
