#pragma once
// SharedBoard: the engine's SharedRendezvous (fast/runtime/shared_rendezvous.hpp), one per
// world whose workers all live in this process (the threads runtime; not under zmq or mpi, whose
// worlds span processes).
// Each worker reaches it through its own Seat (ThreadsContext::shared_rendezvous).
//
// How it works: one 64-bit counter of arrivals, never reset. Use t (every worker's t-th ticket)
// makes each worker add 1 twice, in meet and in leave, so meet(t) returns once the counter reaches
// n(2t + 1) and leave(t) once it reaches n(2t + 2), n the world size. A worker runs its tickets in
// order (meet(t) waits for its own leave(t - 1)), so no arrival of use t + 1 is counted before
// every worker arrived in leave(t): the thresholds cannot be crossed early. A pointer published for
// use t is written before that worker's first arrival and read by the others only between their
// meet and leave of t, so the next use may overwrite it.
//
// Waiting: spins (when the world's threads fit the cores, WorldState::spin_pays) or yields, then
// sleeps on a condition variable, polled every 50 ms for an abort and the operation time limit.
// Thread-safety: every member may be used by every thread of the world.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "fast/runtime/shared_rendezvous.hpp"

namespace fast::runtime::engine {

class WorldState;
struct LinkCounters;

class SharedBoard {
 public:
  explicit SharedBoard(WorldState& world);

  // One worker's view of the board.
  class Seat final : public SharedRendezvous {
   public:
    Seat(SharedBoard& board, int rank) : board_(board), rank_(rank) {}
    std::uint64_t reserve() override { return reserved_.fetch_add(1, std::memory_order_relaxed); }
    void* const* meet(std::uint64_t ticket, void* mine) override;
    void leave(std::uint64_t ticket) override;
    void count_as_sent(int peer, std::uint64_t bytes, std::uint64_t messages) override;
    // This worker's link counters (ThreadsContext's, one per peer), set before its first use.
    void attach(LinkCounters* counters) { board_.counters_[static_cast<std::size_t>(rank_)] = counters; }

   private:
    SharedBoard& board_;
    int rank_;
    std::atomic<std::uint64_t> reserved_{0};  // tickets handed out
    std::atomic<std::uint64_t> finished_{0};  // tickets whose leave returned (in order)
  };

  Seat& seat(int rank) { return *seats_[static_cast<std::size_t>(rank)]; }

 private:
  // Adds one arrival and wakes sleepers.
  void arrive();
  // Returns once pred() holds (pred reads seq_cst, for the sleepers_ handshake); `what` names what the
  // wait is for, `rank` and `ticket` whose wait it is, in the errors (RemoteError, TimeoutError).
  template <typename Pred>
  void wait_until(Pred pred, const char* what, int rank, std::uint64_t ticket);
  void notify();

  WorldState& world_;
  const std::uint64_t n_;
  std::vector<std::unique_ptr<Seat>> seats_;
  std::vector<void*> published_;  // by rank; entry r written only by worker r
  // by rank; entry r set by worker r's context before its first meet, read by others after it
  std::vector<LinkCounters*> counters_;
  alignas(64) std::atomic<std::uint64_t> arrivals_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace fast::runtime::engine
