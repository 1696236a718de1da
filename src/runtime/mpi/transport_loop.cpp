// MpiTransport's progress thread: receiving (matched probes), completing sends, byes.
#include <algorithm>
#include <chrono>
#include <climits>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/wire/frame.hpp"
#include "session.hpp"
#include "transport.hpp"

namespace fast::runtime::mpi {

// How long the progress thread sleeps between polls, by how long nothing happened: short while
// messages flow (a request's answer is a few hops away: each sleep adds to every hop's latency),
// long once the rank has been quiet for a while (idle ranks leave the cores to the workers).
std::chrono::microseconds poll_interval(double quiet_seconds) {
  if (quiet_seconds < 0.05) return std::chrono::microseconds(20);
  if (quiet_seconds < 1.0) return std::chrono::microseconds(200);
  return std::chrono::microseconds(1000);
}

// While an activity of the rank is inside a native collective, that activity progresses MPI on its
// own, and the progress thread only slows it down: polls every 20 us, 200 us or 1 ms cost a large
// share of the collective's time, and even waking every few ms without a poll costs some (each
// wake-up takes a core from a rank that spins in the collective; docs/benchmarks.md, (g)). So the progress
// thread then wakes every kInCollectiveWake, returns to its usual polls once the collective ended,
// and polls during it only when
// - a send is posted, or an activity of the process waits or found no message (ring()): a message
//   only a poll receives may be what it needs;
// - the collective is overdue (MpiCollectives::overdue_at: twice as long as the previous one took,
//   within [kOverdueFloor, kOverdueCap]): it may be waiting for a peer that needs this rank's
//   point-to-point service before it can enter the same collective. Then at every wake;
// - kInCollectivePoll has passed since its last poll: a message for an activity that waits already
//   (a window's service) waits at most that long during a run of collectives.
constexpr std::chrono::milliseconds kInCollectiveWake{20};
constexpr std::chrono::milliseconds kOverdueFloor{20};
constexpr std::chrono::milliseconds kOverdueCap{100};
constexpr std::chrono::milliseconds kInCollectivePoll{100};

void MpiTransport::ring() {
  if (!sleeping_.load()) return;
  { std::lock_guard<std::mutex> lock(bell_mutex_); }
  bell_.notify_one();
}

void MpiTransport::sleep_in_collective(std::chrono::steady_clock::time_point last_poll, std::uint64_t waits) {
  std::unique_lock<std::mutex> lock(bell_mutex_);
  // Set before the loop reads kicked_ and waits_: a sender or waiter that changed them after the
  // read finds sleeping_ set and rings the bell, which this thread waits on without missing it.
  sleeping_ = true;
  while (!kicked_.load() && !stop_.load() && waits_.load() == waits && native_->inside()) {
    const auto now = std::chrono::steady_clock::now();
    const auto since = now - last_poll;
    if (since >= kInCollectivePoll) break;
    if (since >= kInCollectiveWake && now >= native_->overdue_at(kOverdueFloor, kOverdueCap)) break;
    bell_.wait_for(lock, kInCollectiveWake);
  }
  sleeping_ = false;
}

void MpiTransport::loop() {
  using clock = std::chrono::steady_clock;
  int idle = 0;
  auto last_activity = clock::now();
  try {
    while (!stop_.load()) {
      const auto polled = clock::now();
      const std::uint64_t waits = waits_.load();  // waits after this are answered by the next poll
      const bool received = receive_some();
      const bool completed = complete_sends();
      progress_made();
      if (received || completed || kicked_.exchange(false)) {
        idle = 0;
        last_activity = clock::now();
        continue;
      }
      if (native_ != nullptr && native_->inside()) {
        sleep_in_collective(polled, waits);
        continue;
      }
      if (++idle < 200) {  // a reply is often microseconds away: yield before sleeping
        std::this_thread::yield();
        continue;
      }
      std::this_thread::sleep_for(poll_interval(std::chrono::duration<double>(clock::now() - last_activity).count()));
    }
  } catch (const std::exception& e) {
    const std::string reason = fmt::format("mpi runtime: rank {}'s progress thread failed: {}", rank_, e.what());
    core::log(core::LogLevel::error, "{}", reason);
    world_->abort_all(reason);
  }
}

// Receives the messages waiting (at most 16 per call, so sends are completed in between).
bool MpiTransport::receive_some() {
  bool any = false;
  for (int i = 0; i < 16; ++i) {
    int flag = 0;
    MPI_Message message = MPI_MESSAGE_NULL;
    MPI_Status status;
    check(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, &message, &status), "MPI_Improbe");
    if (!flag) break;
    int count = 0;
    check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
    std::unique_ptr<std::byte[]> bytes(new std::byte[static_cast<std::size_t>(std::max(count, 1))]);
    check(MPI_Mrecv(bytes.get(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
    on_message(status.MPI_SOURCE, status.MPI_TAG, std::move(bytes), static_cast<std::size_t>(count));
    any = true;
  }
  return any;
}

// Validates a message (a frame header that names its true source) and delivers it; a malformed
// one is logged and dropped.
void MpiTransport::on_message(int source, int mpi_tag, std::unique_ptr<std::byte[]> bytes, std::size_t size) {
  try {
    const wire::FrameHeader header =
        wire::decode_header(std::span<const std::byte>(bytes.get(), std::min(size, wire::kHeaderBytes)),
                            {.max_payload_bytes = INT_MAX, .world_size = size_});
    const std::span<const std::byte> payload(bytes.get() + wire::kHeaderBytes,
                                             size - std::min(size, wire::kHeaderBytes));
    wire::check_payload(header, payload);
    if (header.src != source)
      throw wire::FrameError(fmt::format("frame: src: expected {} (the MPI source), got {}", source, header.src));
    if (header.kind == wire::FrameKind::data && mpi_tag == kDataTag) {
      if (header.dst != rank_)
        throw wire::FrameError(fmt::format("frame: dst: expected {} (this rank), got {}", rank_, header.dst));
      std::shared_ptr<const std::byte[]> owner(bytes.release());
      world_->deliver_remote(header.src, header.dst, header.tag,
                             core::ConstView(owner.get() + wire::kHeaderBytes, header.count, header.dtype), owner);
    } else if (header.kind == wire::FrameKind::bye && mpi_tag == kControlTag) {
      on_bye(source, std::string(reinterpret_cast<const char*>(payload.data()), payload.size()));
    } else {
      throw wire::FrameError(fmt::format("frame: kind {} under MPI tag {}", static_cast<int>(header.kind), mpi_tag));
    }
  } catch (const core::Error& e) {
    core::log(core::LogLevel::warn, "mpi runtime: dropped a message from rank {}: {}", source, e.what());
  }
}

void MpiTransport::on_bye(int source, const std::string& error) {
  const std::string why = error.empty() ? "left the run (its worker ended)" : "failed: " + error;
  {
    std::lock_guard<std::mutex> lock(peers_mutex_);
    PeerState& s = peers_[static_cast<std::size_t>(source)];
    if (s.said_bye) return;
    s.said_bye = true;
    s.reason = why;
    ++byes_;
    lost_[static_cast<std::size_t>(source)] = true;
  }
  peers_cv_.notify_all();
  const std::string message = fmt::format("worker {} (MPI rank {}) {}", source, source, why);
  world_->fail_source(source, message);
  if (error.empty()) return;
  set_last_failure(message);
  core::log(core::LogLevel::warn, "mpi runtime: {}", message);
  if (on_failed_) on_failed_(message);
}

bool MpiTransport::complete_sends() {
  {
    std::lock_guard<std::mutex> lock(posted_mutex_);
    for (Pending& p : posted_) pending_.push_back(std::move(p));
    posted_.clear();
  }
  if (pending_.empty()) return false;
  std::vector<MPI_Request> requests;
  requests.reserve(pending_.size());
  for (const Pending& p : pending_) requests.push_back(p.request);
  std::vector<int> indices(pending_.size());
  int done = 0;
  check(MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &done, indices.data(), MPI_STATUSES_IGNORE),
        "MPI_Testsome");
  if (done == MPI_UNDEFINED || done == 0) return false;
  for (int i = 0; i < done; ++i) {
    Pending& p = pending_[static_cast<std::size_t>(indices[static_cast<std::size_t>(i)])];
    if (p.type != MPI_DATATYPE_NULL) MPI_Type_free(&p.type);
    if (p.done) p.done->complete();
    p.request = MPI_REQUEST_NULL;
    p.bytes.reset();
  }
  std::erase_if(pending_, [](const Pending& p) { return p.request == MPI_REQUEST_NULL; });
  in_flight_ -= done;
  { std::lock_guard<std::mutex> lock(peers_mutex_); }  // finish() checks in_flight_ under this lock
  peers_cv_.notify_all();
  return true;
}

}  // namespace fast::runtime::mpi
