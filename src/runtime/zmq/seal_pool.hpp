#pragma once
// SealPool: helper threads that seal and open the chunks of large records on the direct streams
// (stream.hpp) alongside the thread that writes or reads them, so that one message is protected
// on several cores and a chunk is sealed (or opened) while the previous one is on the wire.
//
// Jobs are queued in groups: the thread that owns a Group adds jobs to it and waits for them;
// while it waits it runs its own group's jobs that no helper has taken yet (as slot 0), so a pool
// with no helpers runs every job on the waiting thread and no group waits for a busy pool alone.
// A job receives its slot: 0 for the waiting thread, 1..helpers() for the helpers. No slot runs
// two jobs at once, which lets a Sealer keep one cipher context per slot (sealer.hpp).
//
// Ownership: the transport owns the pool; it must outlive every Group (a Group's destructor waits
// for its jobs). The helpers start on the first job and stop in the destructor.
// Thread-safety: add() and wait() of one Group from one thread at a time; any number of Groups
// of one pool at once, from any threads.
// Failure: a job's exception is kept by its Group and rethrown by wait() (the first one); the
// group's other jobs still run.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "sealer.hpp"

namespace fast::runtime::zmq {

class SealPool {
 public:
  // The most slots a pool has (helpers + the waiting thread): one per cipher context a Sealer
  // keeps. FAST_SEAL_THREADS's range follows from it (environment.cpp).
  static constexpr unsigned kMaxSlots = Sealer::kSlots;
  using Job = std::function<void(unsigned slot)>;

  explicit SealPool(unsigned helpers);  // at most kMaxSlots - 1

  // FAST_SEAL_THREADS's automatic choice: the helpers a process gets when every one of the
  // `workers_on_machine` workers sharing the machine's `cores` keeps two cores (its own thread and
  // its streams' reader): the rest of its share, at most 2 (docs/launch.md, "Helper threads").
  // 16 cores, 2 or 4 workers: 2; 3 cores per worker: 1; 2 or fewer: 0.
  static unsigned automatic_helpers(unsigned cores, unsigned workers_on_machine);
  ~SealPool();
  SealPool(const SealPool&) = delete;
  SealPool& operator=(const SealPool&) = delete;

  unsigned helpers() const { return helpers_; }
  unsigned slots() const { return helpers_ + 1; }

  class Group {
   public:
    explicit Group(SealPool& pool) : pool_(pool) {}
    ~Group();  // waits for the jobs still queued or running; their errors are dropped
    Group(const Group&) = delete;
    Group& operator=(const Group&) = delete;

    // Queues `job` (run on the calling thread at once when the pool has no helpers).
    void add(Job job);
    // Returns once every job added so far ran, running queued ones meanwhile; rethrows the first
    // error of those jobs (and forgets it).
    void wait();
    // Whether no job of the group is queued or running.
    bool idle() const;

   private:
    friend class SealPool;
    SealPool& pool_;
    std::size_t pending_ = 0;       // queued or running; under pool_.mutex_
    std::exception_ptr error_;      // the first job's error; under pool_.mutex_
    std::condition_variable done_;  // pending_ reached 0
  };

 private:
  struct Task {
    Group* group;
    Job job;
  };
  void start_helpers();  // under mutex_
  void helper(unsigned slot);
  // Runs `task` as `slot` and accounts for it; `lock` is held on entry and on return.
  void run(Task& task, unsigned slot, std::unique_lock<std::mutex>& lock);

  const unsigned helpers_;
  mutable std::mutex mutex_;
  std::condition_variable work_;
  std::deque<Task> queue_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

}  // namespace fast::runtime::zmq
