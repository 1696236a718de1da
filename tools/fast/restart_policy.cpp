#include "restart_policy.hpp"

#include "fast/core/error.hpp"
#include "fast/core/exit_code.hpp"

namespace fast::cli {

RestartPolicy::RestartPolicy(int restarts) : restarts_(restarts) {
  FAST_ENFORCE(restarts >= 0, "fast launch: --restart expects a number of restarts >= 0, got {}", restarts);
}

RestartAction RestartPolicy::on_exit(int rank, int code, bool stopping) {
  // A process started again alone that ends with 0 joined a run that ended with it, or was told that
  // the run ends without it: the group's own exits say whether the run finishes; its 0 adds nothing,
  // and must not hide a survivor's exit code 3 that launch reaps after it.
  if (code == core::exit_code::ok && lone_.contains(rank)) return RestartAction::none;
  // 0, or an elastic run that ended below its --min-workers on purpose: the run is finishing.
  if (code == core::exit_code::ok || code == core::exit_code::below_min_workers) {
    finishing_ = true;
    return RestartAction::none;
  }
  if (stopping || finishing_) return RestartAction::none;
  // The run could not take back a process started alone: the group restart continues that restart.
  const bool refused = code == core::exit_code::bad_input && lone_.contains(rank);
  if (lone_restart_ && (code == core::exit_code::io_or_peer_lost || refused)) {
    lone_restart_ = false;
    return RestartAction::all;
  }
  if (code == core::exit_code::bad_input || left() == 0) return RestartAction::none;
  ++spent_;
  if (code == core::exit_code::io_or_peer_lost) return RestartAction::all;
  lone_restart_ = true;
  lone_.insert(rank);
  return RestartAction::one;
}

void RestartPolicy::group_started() {
  finishing_ = false;
  lone_restart_ = false;
  lone_.clear();
}

}  // namespace fast::cli
