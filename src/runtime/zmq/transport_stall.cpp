// ZmqTransport's own stalls (transport.hpp): a process whose I/O thread was held up (the process
// stopped by a signal, frozen in a virtual machine's pause, starved of CPU) may have been counted
// lost by the others meanwhile, and must not then count them lost in turn and train on alone.
#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "hello.hpp"
#include "transport.hpp"

namespace fast::runtime::zmq {

namespace {
constexpr double kMinAnswerSeconds = 1;            // at least this long to answer a query, whatever the peer timeout
constexpr double kTellAgainSeconds = 1;            // a process counted lost is told so at most this often
constexpr std::size_t kMaxToldReasonBytes = 1000;  // of a reason told to or by another process
}  // namespace

bool ZmqTransport::watch_own_stall(double now) {
  const double held = now - last_check_;
  last_check_ = now;
  if (held > settings_.peer_timeout / 2) begin_stall_check(held, now);
  if (!stall_check_ || now < stall_check_->until) return true;
  const StallCheck check = *stall_check_;
  stall_check_.reset();
  if (check.answered) return true;
  {
    // One that ended cleanly meanwhile said bye to it: it did not count this process out (the end
    // of a run whose I/O thread was merely slow).
    std::lock_guard<std::mutex> lock(peers_mutex_);
    for (int p : check.asked)
      if (peers_[static_cast<std::size_t>(p)].ended) return true;
  }
  expel_self(
      fmt::format("after its I/O thread was held up for {:.1f} s, none of the {} other processes answered "
                  "within {:.1f} s whether they still count it in: they ended, failed or went on without it",
                  check.held_up, check.asked.size(), check.until - check.since));
  return false;
}

void ZmqTransport::begin_stall_check(double held, double now) {
  std::vector<int> live;
  {
    std::lock_guard<std::mutex> lock(peers_mutex_);
    for (std::size_t p = 0; p < peers_.size(); ++p)
      if (static_cast<int>(p) != process_ && !peers_[p].lost) {
        live.push_back(static_cast<int>(p));
        // Their silence is counted from now: this process, not they, was silent.
        peers_[p].last_heard = std::max(peers_[p].last_heard, now);
      }
  }
  if (live.empty()) return;  // alone in the run: nobody to ask, nobody counted it lost
  core::log(core::LogLevel::warn,
            "zmq runtime: this process's I/O thread was held up for {:.1f} s (the process was stopped, frozen or "
            "starved of CPU; the peer timeout is {} s): asking the {} other process{} whether they still count it in "
            "before counting any of them lost",
            held, settings_.peer_timeout, live.size(), live.size() == 1 ? "" : "es");
  stall_check_ = StallCheck{
      .since = now, .until = now + std::max(settings_.peer_timeout, kMinAnswerSeconds), .held_up = held, .asked = live};
  for (int p : live) send_hello(p, {{"still_member", true}});
}

void ZmqTransport::on_membership_query(int from) {
  std::string reason;
  bool lost = false;
  {
    std::lock_guard<std::mutex> lock(peers_mutex_);
    lost = peers_[static_cast<std::size_t>(from)].lost;
    reason = peers_[static_cast<std::size_t>(from)].reason;
  }
  if (!lost) {
    send_hello(from, {{"member", true}});
    return;
  }
  // Its link was closed when it was counted lost: a socket of its own carries the answer.
  double& told = told_lost_at_[static_cast<std::size_t>(from)];
  const double now = clock();
  if (told > 0 && now - told < kTellAgainSeconds) return;
  told = now;
  const ProcessInfo& peer = table_[static_cast<std::size_t>(from)];
  const std::string why =
      fmt::format("{} counts it out of the run ({})", table_[static_cast<std::size_t>(process_)].where(),
                  reason.substr(0, kMaxToldReasonBytes));
  try {
    std::unique_ptr<::zmq::socket_t> dealer = make_dealer(peer);  // closed at once; it lingers to send
    Frame frame = control_frame(wire::FrameKind::hello, peer, nlohmann::json{{"counted_lost", why}}.dump());
    if (dealer->send(frame.header, ::zmq::send_flags::sndmore | ::zmq::send_flags::dontwait))
      (void)dealer->send(frame.payload, ::zmq::send_flags::dontwait);
  } catch (const ::zmq::error_t& e) {  // out of sockets: it finds out by the time limit of its question
    core::log(core::LogLevel::warn, "zmq runtime: cannot answer {}: {}", peer.where(), e.what());
    return;
  }
  core::log(core::LogLevel::warn, "zmq runtime: {}, counted lost, asked whether it is still in the run: told it is not",
            peer.where());
}

void ZmqTransport::expel_self(const std::string& why) {
  if (expelled_.exchange(true)) return;
  stall_check_.reset();
  const std::string message = fmt::format(
      "zmq runtime: {} was counted lost by the run and leaves it: {}. The other processes go on without it; start it "
      "again with the same command and FAST_RESTARTED=1 (fast launch --restart does) to take its rank back",
      table_[static_cast<std::size_t>(process_)].where(), why.substr(0, kMaxToldReasonBytes));
  core::log(core::LogLevel::error, "{}", message);  // the why, once: errors are always logged
  // What every pending and later operation of this process fails with (the error that ends it).
  world_->abort_all(
      fmt::format("zmq runtime: {} was counted lost by the run and left it (the error logged above says why)",
                  table_[static_cast<std::size_t>(process_)].where()));
  {
    std::lock_guard<std::mutex> lock(peers_mutex_);  // settle_lost_peers() waits for nobody now
  }
  peers_cv_.notify_all();
}

}  // namespace fast::runtime::zmq
