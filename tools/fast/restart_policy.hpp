#pragma once
// RestartPolicy: what `fast launch --restart N` does when one of its processes ends
// (docs/launch.md, "Restarts"). Pure bookkeeping, no processes: launch.cpp acts on its answers.
//
//   - an exit code 0 is never restarted, and once a process of the current start ended with 0 the
//     run is finishing: nothing more is restarted until the whole group starts again (a process
//     started again alone does not count: its 0 says that the run ends, or ended, without it, and
//     must not hide a survivor's failure that launch reaps after it); so is an exit
//     code 6 (exit_code::below_min_workers: an elastic run that a loss took below --min-workers
//     ended there on purpose, and starting its processes again would not bring the group back);
//   - nothing is restarted while launch itself stops the processes (a forwarded SIGINT, SIGTERM or
//     SIGHUP, --timeout, the grace after a failure that was not restarted), nor after exit code 2
//     (bad input fails again the same way; but see below), nor once the N restarts are spent;
//   - a process that died otherwise (a signal, an exit code other than 0, 2, 3 and 6) is started
//     again alone, with its rank and environment (an asynchronous run under zmq takes it back, an
//     elastic synchronous one too, process 0 included: a survivor serves the rendezvous in its
//     place; docs/faults.md);
//   - an exit code 3 (a process lost a peer: the run could not go on or take the restarted process
//     back) restarts the whole group: launch stops every process and starts all of them again.
//
// Each restart, alone or of the group, spends one of the N; but a group restart that follows a lone
// restart of the same start because the run could not take the process back continues that
// restart and spends nothing more: an exit code 3 (a synchronous run's survivors lost the process),
// or an exit code 2 of the process started alone (the run refused it: a ps server's rank, a codec).
// So one failure spends one restart, and the processes are started at most 2N + 1 times.
//
// One object per launch, used by its main thread only.

#include <set>

namespace fast::cli {

enum class RestartAction {
  none,  // not restarted: the exit is counted as launch has always counted it
  one,   // start this process again, alone
  all,   // stop every process, then start the whole group again
};

class RestartPolicy {
 public:
  // restarts: N >= 0 (0: launch restarts nothing, as without --restart).
  explicit RestartPolicy(int restarts);

  // Process `rank` of the current start ended with exit code `code` (128 + signal if killed);
  // `stopping`: launch is stopping the processes itself. Returns what to do, and spends a restart
  // for one and all (see above).
  RestartAction on_exit(int rank, int code, bool stopping);
  // The whole group was started again: a new start, with nothing finished yet.
  void group_started();

  // A process of the current start ended with 0 (or 6): the run is finishing.
  bool finishing() const noexcept { return finishing_; }
  // Whether `rank` was started again alone in the current start.
  bool started_alone(int rank) const { return lone_.contains(rank); }

  int restarts() const noexcept { return restarts_; }  // N
  int spent() const noexcept { return spent_; }        // restarts spent so far
  int left() const noexcept { return restarts_ - spent_; }

 private:
  int restarts_;
  int spent_ = 0;
  bool finishing_ = false;     // a process of this start ended with code 0
  bool lone_restart_ = false;  // a process of this start was restarted alone
  std::set<int> lone_;         // the ranks restarted alone in this start
};

}  // namespace fast::cli
