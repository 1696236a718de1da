#pragma once
// MpiTransport: the mpi runtime's link between this rank's worker and the other ranks
// (engine/transport.hpp). One worker per rank; ranks are MPI_COMM_WORLD's.
//
// Messages. Every FAST message is ONE MPI message on a private duplicate of MPI_COMM_WORLD,
// under MPI tag kDataTag: a wire/ frame header (56 bytes: FAST's 64-bit tag, source, destination,
// dtype, count) followed by the payload. FAST tags never become MPI tags, so MPI_TAG_UB (which
// may be as low as 32767) cannot make two FAST tags collide; the in-process matcher matches
// them. MPI keeps messages from one rank in order, which gives the contract's order per (peer,
// tag). A payload under kCopyBytes is copied with its header into one buffer and the send's Work
// completes at once; a larger one is sent in place (an MPI datatype spanning header and payload)
// and its Work completes when MPI_Isend completes.
//
// Progress. One thread per process receives: MPI_Improbe on any source and any tag, then
// MPI_Mrecv into a buffer of the probed size (a matched probe: the size is known before the
// receive, and no other thread can take the message in between), validates the header and hands
// the message to the LocalWorld. It also completes the pending sends (MPI_Testsome). Between
// polls that found nothing it yields 200 times, then sleeps 20 us while messages flowed in the
// last 50 ms, 200 us after that and 1 ms after a quiet second (docs/benchmarks.md, (h)). While an
// activity of the rank is inside a native collective (which progresses MPI on its own thread) it
// does not yield, wakes every 20 ms to see whether the collective ended, and polls only when a
// send is posted or an activity waits for a message or looks for one (progress_wanted), when the
// collective is overdue (a peer may need this rank's point-to-point service before it enters the
// same collective), or 100 ms after its last poll (transport_loop.cpp; docs/benchmarks.md, (g)).
//
// End and failure (MPI is fail-stop: a rank that dies makes mpirun end the others). A rank whose
// worker fails sends `bye` with the error to every rank (kControlTag); a rank whose worker ended
// sends `bye` without error. A peer that said bye is lost for sends and receives (PeerLost naming
// it and why); one that failed aborts this rank's run unless the run tolerates lost workers.
// finish() returns once every other rank said bye and every send completed, so no message is
// left unreceived at MPI_Finalize.
//
// Thread-safety: send/alive/ensure_alive from any worker thread; the rest from the thread that
// runs the process's world.

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../completion.hpp"
#include "../engine/local_world.hpp"
#include "../engine/transport.hpp"
#include "collectives.hpp"
#include "remote_memory.hpp"

namespace fast::runtime::mpi {

class MpiTransport final : public engine::Transport {
 public:
  static constexpr std::size_t kCopyBytes = 64 * 1024;
  static constexpr int kDataTag = 1;
  static constexpr int kControlTag = 2;

  // comm: this transport's own communicator (a duplicate of MPI_COMM_WORLD; not freed here).
  MpiTransport(MPI_Comm comm, int rank, int size, double op_timeout_seconds);
  ~MpiTransport() override;

  // Starts the progress thread, delivering into `world`. on_failed(reason) runs on that thread
  // when another rank says its worker failed.
  void start(engine::LocalWorld& world, std::function<void(const std::string&)> on_failed);
  // This rank's worker failed: tells every other rank at once (bye with the error).
  void announce_failure(const std::string& reason);
  // This rank's worker returned: says bye (once) and waits until every other rank said bye and
  // every send completed, at most limit_seconds (then warns and returns).
  void finish(double limit_seconds);
  // Joins the progress thread.
  void stop();

  // The native collectives this rank's worker sees (null: FAST's own; set before start()).
  void set_native_collectives(MpiCollectives* native) { native_ = native; }
  // The one-sided memory this rank's worker sees (null: FAST's window service; set before start()).
  void set_remote_memory(MpiRemoteMemory* remote) { remote_ = remote; }

  core::Work send(int src, int dst, Tag tag, core::ConstView data) override;
  bool alive(int rank) const override;
  void ensure_alive(int rank) const override;
  // An activity waits, or found no message (try_recv): the progress thread, if it sleeps inside a
  // collective, polls.
  void progress_wanted() override {
    waits_.fetch_add(1);  // before ring() reads sleeping_ (see sleep_in_collective)
    ring();
  }
  // MPI delivers a bye after every message sent before it; there is nothing to wait for.
  void settle_lost_peers() override {}
  NativeCollectives* native_collectives() override { return native_; }
  RemoteMemory* remote_memory(engine::LinkCounters* counters) override {
    if (remote_ != nullptr) remote_->count_into(counters);
    return remote_;
  }

 private:
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Datatype type = MPI_DATATYPE_NULL;     // a datatype to free when done (in-place sends)
    std::unique_ptr<std::byte[]> bytes;        // the header, or header + copied payload
    std::shared_ptr<detail::Completion> done;  // completed with the request (in-place sends)
  };
  struct PeerState {
    bool said_bye = false;
    std::string reason;  // why it is lost (set with said_bye)
  };

  void post(Pending pending, const void* buffer, int count, MPI_Datatype type, int dst, int mpi_tag);
  void send_bye(const std::string& error);
  void loop();
  // Wakes the progress thread from sleep_in_collective() (a send was posted, progress is wanted,
  // or stop).
  void ring();
  // Sleeps while an activity of the rank is inside a native collective, until the next poll is due
  // (transport_loop.cpp: the collective ended, a send posted, progress wanted since waits_ was
  // `waits`, the collective overdue, or 100 ms after last_poll).
  void sleep_in_collective(std::chrono::steady_clock::time_point last_poll, std::uint64_t waits);
  bool receive_some();
  bool complete_sends();
  void on_message(int source, int mpi_tag, std::unique_ptr<std::byte[]> bytes, std::size_t size);
  void on_bye(int source, const std::string& error);

  MPI_Comm comm_;
  int rank_;
  int size_;
  double op_timeout_;
  MpiCollectives* native_ = nullptr;
  MpiRemoteMemory* remote_ = nullptr;
  engine::LocalWorld* world_ = nullptr;
  std::function<void(const std::string&)> on_failed_;

  std::mutex posted_mutex_;
  std::vector<Pending> posted_;   // sends posted by worker threads, not yet seen by the progress thread
  std::vector<Pending> pending_;  // progress thread only
  std::atomic<int> in_flight_{0};
  std::atomic<bool> kicked_{false};
  std::mutex bell_mutex_;
  std::condition_variable bell_;
  std::atomic<bool> sleeping_{false};    // the progress thread is in sleep_in_collective()
  std::atomic<std::uint64_t> waits_{0};  // progress_wanted() calls so far

  mutable std::mutex peers_mutex_;
  std::condition_variable peers_cv_;
  std::vector<PeerState> peers_;
  int byes_ = 0;  // peers that said bye
  std::unique_ptr<std::atomic<bool>[]> lost_;
  bool bye_sent_ = false;  // guarded by peers_mutex_

  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace fast::runtime::mpi
