#include "launch.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "fast/core/counted.hpp"
#include "fast/core/error.hpp"
#include "fast/core/exit_code.hpp"
#include "fast/core/port_range.hpp"
#include "fast/runtime/zmq/keys.hpp"
#include "fast/runtime/zmq/ports.hpp"
#include "hosts.hpp"
#include "launch_janitor.hpp"
#include "launch_plan.hpp"
#include "process_group.hpp"
#include "restart_policy.hpp"
#include "signal_pipe.hpp"

extern char** environ;

namespace fast::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
namespace keys = fast::runtime::zmq;

constexpr int kMaxRestarts = 1000;
constexpr double kKillAfterTermSeconds = 5;

// Throws InvalidArgument with the formatted message when ok is false (no source location: for users).
template <typename... Args>
void require(bool ok, fmt::format_string<Args...> format, Args&&... args) {
  if (!ok) throw core::InvalidArgument(fmt::format(format, std::forward<Args>(args)...));
}

bool executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// The executable `name` runs: name itself if it holds a '/', else the first match on PATH. `fast`
// not on PATH is this very executable. `role` names it in the refusal: "command", "--launcher's
// program".
fs::path find_program(const std::string& name, std::string_view role = "command") {
  if (name.find('/') != std::string::npos) {
    require(executable_file(name), "fast launch: {} '{}' is not an executable file", role, name);
    return name;
  }
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t begin = 0; begin <= dirs.size();) {
    const std::size_t end = std::min(dirs.find(':', begin), dirs.size());
    const fs::path dir = end > begin ? fs::path(dirs.substr(begin, end - begin)) : fs::path(".");
    if (executable_file(dir / name)) return dir / name;
    begin = end + 1;
  }
  if (name == "fast") return fs::read_symlink("/proc/self/exe");
  FAST_THROW(core::InvalidArgument, "fast launch: {} '{}' not found on PATH ({})", role, name, dirs);
}

// The key and allow files of a run. Generated ones live in a fresh mkdtemp folder (0700) that the
// destructor removes.
class RunKeys {
 public:
  RunKeys(const LaunchCommand& o) {
    if (o.insecure) return;
    if (!o.key_file.empty()) {
      key_ = fs::absolute(o.key_file);
      const keys::KeyPair pair = keys::read_key_file(key_);
      if (!o.allow_file.empty()) {
        allow_ = fs::absolute(o.allow_file);
        check_admitted(keys::read_allow_file(allow_), pair.public_key);
        return;
      }
      make_dir();
      allow_ = dir_ / "allow.txt";
      keys::write_allow_file(allow_, {{pair.public_key, "fast launch"}});
      return;
    }
    make_dir();
    key_ = dir_ / "run.key";
    allow_ = dir_ / "allow.txt";
    const keys::KeyPair pair = keys::generate_key_pair();
    keys::write_key_file(key_, pair);
    keys::write_allow_file(allow_, {{pair.public_key, "fast launch"}});
  }
  ~RunKeys() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  RunKeys(const RunKeys&) = delete;
  RunKeys& operator=(const RunKeys&) = delete;

  const fs::path& key_file() const { return key_; }
  const fs::path& allow_file() const { return allow_; }
  const fs::path& dir() const { return dir_; }

 private:
  void make_dir() {
    std::string pattern = (fs::temp_directory_path() / "fast-launch-XXXXXX").string();
    FAST_ENFORCE_AS(core::IoError, ::mkdtemp(pattern.data()) != nullptr,
                    "fast launch: cannot create a folder for the run's keys from '{}' ({})", pattern,
                    std::strerror(errno));
    dir_ = pattern;
  }
  void check_admitted(const std::vector<keys::AllowedKey>& allowed, const std::string& public_key) const {
    const bool found = std::any_of(allowed.begin(), allowed.end(),
                                   [&](const keys::AllowedKey& k) { return k.public_key == public_key; });
    require(found,
            "fast launch: --allow '{}' does not hold the public key of --key '{}' ({}); the processes would "
            "refuse each other: add the line of '{}.pub'",
            allow_.string(), key_.string(), public_key, key_.string());
    // Every process of the launch holds --key, process 0 serves the rendezvous with it, and the
    // others expect the allow-list's first key of that server.
    require(allowed.front().public_key == public_key,
            "fast launch: --allow '{}' starts with the key {}, but process 0 serves the rendezvous with the key of "
            "--key '{}' ({}), and the others expect the allow-list's first key of it: put the line of '{}.pub' first",
            allow_.string(), allowed.front().public_key, key_.string(), public_key, key_.string());
  }

  fs::path dir_, key_, allow_;
};

void validate(const LaunchCommand& o) {
  require(o.hosts.empty() || o.hostfile.empty(), "fast launch: --hosts and --hostfile exclude each other (got both)");
  const bool across_hosts = !o.hosts.empty() || !o.hostfile.empty();
  require(across_hosts || o.processes != -1,
          "fast launch: expected -n N, the number of processes to start (1 to {}), or --hosts/--hostfile; got "
          "neither",
          kMaxProcesses);
  require((across_hosts && o.processes == -1) || (o.processes >= 1 && o.processes <= kMaxProcesses),
          "fast launch: -n expects a number of processes in [1, {}]{}, got {}", kMaxProcesses,
          across_hosts ? " (or none with --hosts: their slots)" : "", o.processes);
  require(!o.command.empty(),
          "fast launch: expected a command to run after the options (fast launch -n {} -- "
          "COMMAND [ARGS...]), got none",
          o.processes == -1 ? std::string("N") : std::to_string(o.processes));
  require(o.port >= 0 && o.port <= 65535, "fast launch: --port expects a port in [0, 65535], got {}", o.port);
  require(o.grace_seconds >= 0, "fast launch: --grace expects seconds >= 0, got {}", o.grace_seconds);
  require(o.timeout_seconds >= 0, "fast launch: --timeout expects seconds >= 0 (0: none), got {}", o.timeout_seconds);
  require(o.restarts >= 0 && o.restarts <= kMaxRestarts,
          "fast launch: --restart expects a number of restarts in [0, {}], got {}", kMaxRestarts, o.restarts);
  require(!o.insecure || (o.key_file.empty() && o.allow_file.empty()),
          "fast launch: --insecure excludes --key and --allow (got{}{})",
          o.key_file.empty() ? "" : fmt::format(" --key '{}'", o.key_file),
          o.allow_file.empty() ? "" : fmt::format(" --allow '{}'", o.allow_file));
  require(o.allow_file.empty() || !o.key_file.empty(),
          "fast launch: --allow '{}' needs --key FILE: the processes' own public key must be in the allow-list",
          o.allow_file);
  require(across_hosts || o.launcher.empty(),
          "fast launch: --launcher '{}' starts the processes on the hosts of --hosts or --hostfile; got neither "
          "(without them every process starts on this host, directly)",
          o.launcher);
}

// The launcher template of a run across hosts: --launcher's, else ssh.
std::string launcher_template(const LaunchCommand& o) { return o.launcher.empty() ? "ssh {host}" : o.launcher; }

using Variables = std::vector<std::pair<std::string, std::string>>;

// The run's variables of process `rank` (an empty value: not set); `alone`: the process is started
// again alone, in a run under way (FAST_RESTARTED: process 0 then asks the rendezvous's server to
// take its rank back instead of serving it).
Variables run_variables(const LaunchCommand& o, const RunPlan& plan, int rank, bool alone) {
  const auto [local_rank, local_world] = local_place(plan, rank);
  return {
      {"FAST_WORLD_SIZE", std::to_string(plan.processes)},
      {"FAST_PROCESS_RANK", std::to_string(rank)},
      {"FAST_RENDEZVOUS", plan.rendezvous},
      {"FAST_LAUNCHED", "1"},
      {"FAST_LOCAL_RANK", std::to_string(local_rank)},
      {"FAST_LOCAL_WORLD_SIZE", std::to_string(local_world)},
      {"FAST_RESTARTED", alone ? "1" : ""},
      {"FAST_INSECURE", o.insecure ? "1" : "0"},
      {"FAST_PORTS", o.ports},
  };
}

// launch's environment with `set` replacing any inherited variables of those names.
std::vector<std::string> child_environment(const Variables& set) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    if (std::none_of(set.begin(), set.end(), [&](const auto& kv) { return kv.first == name; })) env.emplace_back(entry);
  }
  for (const auto& [name, value] : set) {
    if (!value.empty()) env.push_back(name + "=" + value);
  }
  return env;
}

void say(const std::string& line) {
  const std::string text = "fast launch: " + line + "\n";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, text.data(), text.size());
}

Clock::time_point after(Clock::time_point t, double seconds) {
  return t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// The stopping sequence: SIGTERM at term_at, SIGKILL at kill_at (both to whole process groups).
struct Stopping {
  Clock::time_point term_at = Clock::time_point::max();
  Clock::time_point kill_at = Clock::time_point::max();
  bool term_sent = false, kill_sent = false;

  // Asks for SIGTERM after wait_seconds (kept if an earlier one is due), SIGKILL 5 s later.
  void begin(Clock::time_point now, double wait_seconds) {
    term_at = std::min(term_at, after(now, wait_seconds));
    kill_at = std::min(kill_at, after(term_at, kKillAfterTermSeconds));
  }
  // Sends what is due; returns the next deadline.
  Clock::time_point act(ProcessGroup& group, Clock::time_point now) {
    if (!term_sent && now >= term_at) {
      term_sent = true;
      say(fmt::format("sending SIGTERM to the {} still running", core::processes(group.signal(SIGTERM, true))));
    }
    if (!kill_sent && now >= kill_at) {
      kill_sent = true;
      say(fmt::format("sending SIGKILL to the {} still running", core::processes(group.signal(SIGKILL, true))));
    }
    return !term_sent ? term_at : (!kill_sent ? kill_at : Clock::time_point::max());
  }
};

// Whether the failure named so far (process `named`, exit code `code`; `own_io_error`: its last
// line on stderr said it was an I/O error of its own, a port or file, not a peer) is better
// explained by `e`, a later one: a process that loses a peer exits with io_or_peer_lost (3), often
// because that peer failed, and may do so first (it notices at once; the peer may take a moment to
// exit, or be reaped in the same poll, in rank order). A later failure with another code, or with
// the same code where that process said it was an I/O error of its own (`later_io_error`), before
// launch itself stops the processes (`stopping`: what exits then is launch's doing), is then the
// run's failure.
bool is_consequence(int named, int code, bool own_io_error, const ChildExit& e, bool later_io_error, bool stopping) {
  return named >= 0 && code == core::exit_code::io_or_peer_lost && !own_io_error &&
         (e.code != core::exit_code::io_or_peer_lost || later_io_error) && !stopping;
}

// Whether process `rank` ended saying it failed on an I/O error of its own ("fast: I/O error: ...",
// or "fast SUBCOMMAND: I/O error: ..." where the message named its subcommand).
bool said_io_error(const ProcessGroup& group, int rank) {
  const std::string line = group.last_error_line(rank);
  const std::size_t kind = line.find(fmt::format(": {}: ", core::exit_code::io_error_kind));
  return line.starts_with("fast") && kind != std::string::npos && kind == line.find(": ");
}

// How supervise() starts processes again (--restart): the specs of the current start, by rank, and
// those of a new start of the whole group (a fresh rendezvous port where launch chose it).
struct Restarts {
  RestartPolicy policy;
  std::vector<ChildSpec> specs;  // the current start's
  std::vector<ChildSpec> alone;  // the same, for a process started again alone (FAST_RESTARTED=1)
  std::function<std::pair<std::vector<ChildSpec>, std::vector<ChildSpec>>()> replan;  // specs, alone
  LaunchJanitor& janitor;
};

// The announcement of a restart on launch's stderr: which process, why, what, and what is left.
void announce_restart(const ProcessGroup& group, int rank, const ChildExit& e, RestartAction action,
                      const RestartPolicy& policy) {
  const std::string what = action == RestartAction::one
                               ? "starting it again with its rank and environment"
                               : fmt::format("stopping the {} still running and starting all {} again",
                                             core::processes(group.running()), group.size());
  say(fmt::format("process {} (pid {}) failed: {}; {} (--restart: {} of {} restarts spent, {} left)", rank,
                  group.pid(rank), e.describe(), what, policy.spent(), policy.restarts(), policy.left()));
}

// The run's verdict: the first failure that is not restarted (or the timeout), launch's exit code.
struct Verdict {
  std::optional<int> code;
  int named = -1;  // the process whose failure `code` is
  bool own_io_error = false;  // said_io_error(named)

  // Process `rank` failed (`e`) and is not restarted: the first such failure is the run's, named,
  // and starts the grace; a later one replaces a first exit code 3 it most likely caused
  // (is_consequence), until launch stops the processes itself. `forwarded`: the signal launch
  // forwarded to the processes (0: none); an end on it is said to be so, not a failure.
  void failed(const ProcessGroup& group, int rank, const ChildExit& e, double grace_seconds, Stopping& stopping,
              bool timed_out, int forwarded) {
    if (!code) {
      code = e.code;
      named = rank;
      own_io_error = said_io_error(group, rank);
      const char* name = forwarded != 0 ? ::sigabbrev_np(forwarded) : nullptr;
      if (name != nullptr && (e.code == core::exit_code::killed_by(forwarded) || e.signal == forwarded))
        say(fmt::format("process {} (pid {}) stopped on the SIG{} launch forwarded: {}", rank, group.pid(rank), name,
                        e.describe()));
      else
        say(fmt::format("process {} (pid {}) failed first: {}", rank, group.pid(rank), e.describe()));
      if (group.running() > 0)
        say(fmt::format("waiting up to {} s (--grace) for the other {} to end", grace_seconds,
                        core::processes(group.running())));
      stopping.begin(Clock::now(), grace_seconds);
    } else if (is_consequence(named, *code, own_io_error, e, said_io_error(group, rank),
                              stopping.term_sent || timed_out)) {
      say(
          fmt::format("process {} (pid {}) failed: {}; the exit code {} of process {} before it (a lost peer) most "
                      "likely followed from this failure, which is the run's",
                      rank, group.pid(rank), e.describe(), *code, named));
      code = e.code;
      named = rank;
      own_io_error = said_io_error(group, rank);
    }
  }
};

// Starts every process of the group again (all ended), from a fresh plan (RunPlan's port).
void start_group_again(ProcessGroup& group, Restarts& restarts) {
  std::tie(restarts.specs, restarts.alone) = restarts.replan();
  for (int rank = 0; rank < group.size(); ++rank) {
    group.restart(rank, restarts.specs[static_cast<std::size_t>(rank)]);
    restarts.janitor.watch(group.pid(rank));
  }
  restarts.policy.group_started();
  say(fmt::format("started the {} again", core::processes(static_cast<long long>(group.size()))));
}

// The run finished (a process of the current start ended with 0) and every process still running
// was started again alone: such a process joins the run or takes its rank back at the members'
// step boundaries, which are over; one that joined ends with them within moments. The others are
// stopped after kLateJoinerSeconds (at most --grace), and their ends are no failure of the run.
constexpr double kLateJoinerSeconds = 10;
bool only_late_joiners_left(const ProcessGroup& group, const RestartPolicy& policy) {
  if (!policy.finishing() || group.running() == 0) return false;
  for (int rank = 0; rank < group.size(); ++rank)
    if (!group.exit(rank) && !policy.started_alone(rank)) return false;
  return true;
}

// What supervise() has decided so far.
struct Supervision {
  Verdict verdict;
  bool timed_out = false;
  int forwarded = 0;          // the last signal launch forwarded to the processes; 0: none
  bool late_joiners = false;  // only processes started again alone run on, after the run finished
  bool regrouping = false;    // a restart of the whole group: waiting for every process to end
  int regroup_code = 0;       // the exit code that asked for it (the run's, should a signal end it there)
  int ended_well_after = 0;   // processes that exited with 0 after the failure named, before launch stopped any
  Stopping stopping;
};

// Process `rank` ended: started again (alone or with the group), or judged.
void on_child_exit(ProcessGroup& group, int rank, const LaunchCommand& o, Restarts& restarts, Supervision& s) {
  const ChildExit& e = *group.exit(rank);
  if (s.regrouping) return;  // launch stops them: their ends are its doing
  const RestartAction action =
      restarts.policy.on_exit(rank, e.code, s.verdict.code.has_value() || s.timed_out || s.forwarded != 0);
  if (action != RestartAction::none) announce_restart(group, rank, e, action, restarts.policy);
  if (action == RestartAction::none && e.code == core::exit_code::bad_input && restarts.policy.left() > 0 &&
      !s.verdict.code && !s.timed_out && s.forwarded == 0)
    say(
        fmt::format("process {} (pid {}) exited with code 2 (bad input): not started again (--restart), as it "
                    "would fail the same way",
                    rank, group.pid(rank)));
  if (action == RestartAction::one) {
    group.restart(rank, restarts.alone[static_cast<std::size_t>(rank)]);
    restarts.janitor.watch(group.pid(rank));
    return;
  }
  if (action == RestartAction::all) {
    s.regrouping = true;
    s.regroup_code = e.code;
    s.stopping.begin(Clock::now(), 0);
    return;
  }
  // Stopped by launch once the run finished without it; a failure before that still counts.
  if (s.late_joiners && (s.stopping.term_sent || !e.failed())) return;
  if (e.failed()) s.verdict.failed(group, rank, e, o.grace_seconds, s.stopping, s.timed_out, s.forwarded);
  else if (s.verdict.code && !s.stopping.term_sent && !s.timed_out && s.forwarded == 0)
    ++s.ended_well_after;
}

// Forwards the signals launch received (but SIGCHLD) to every process, which then get --grace.
void forward_signals(ProcessGroup& group, SignalPipe& signals, const LaunchCommand& o, Supervision& s) {
  for (int sig : signals.take()) {
    if (sig == SIGCHLD) continue;
    const char* name = ::sigabbrev_np(sig);
    say(fmt::format("got SIG{}; forwarded it to {}", name != nullptr ? name : "?",
                    core::processes(group.signal(sig, false))));
    s.forwarded = sig;
    s.stopping.begin(Clock::now(), o.grace_seconds);
  }
}

// Runs the main loop until every child ended; returns launch's exit code.
int supervise(ProcessGroup& group, SignalPipe& signals, const LaunchCommand& o, Restarts& restarts) {
  const Clock::time_point timeout_at =
      o.timeout_seconds > 0 ? after(Clock::now(), o.timeout_seconds) : Clock::time_point::max();
  Supervision s;
  std::optional<int>& code = s.verdict.code;
  while (group.running() > 0) {
    Clock::time_point now = Clock::now();
    if (!s.timed_out && now >= timeout_at) {
      s.timed_out = true;
      if (!code) code = core::exit_code::launch_timeout;
      say(fmt::format("--timeout {} s reached; stopping the {} still running", o.timeout_seconds,
                      core::processes(group.running())));
      s.stopping.begin(now, 0);
    }
    const Clock::time_point next =
        std::min(s.stopping.act(group, now), s.timed_out ? Clock::time_point::max() : timeout_at);
    const auto wait =
        std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(next - now) + std::chrono::milliseconds(1),
                   std::chrono::milliseconds(0), std::chrono::milliseconds(1000));
    for (int rank : group.pump(wait, signals.fd())) on_child_exit(group, rank, o, restarts, s);
    if (!s.late_joiners && !code && !s.regrouping && only_late_joiners_left(group, restarts.policy)) {
      s.late_joiners = true;
      const double late_wait = std::min(kLateJoinerSeconds, o.grace_seconds);
      say(
          fmt::format("the run's other processes ended; waiting up to {} s for the {} started again alone (one that "
                      "joined the run ends with it; one that did not can no longer join, and is stopped then)",
                      late_wait, core::processes(group.running())));
      s.stopping.begin(Clock::now(), late_wait);
    }
    forward_signals(group, signals, o, s);
    if (s.regrouping && group.running() == 0 && s.forwarded == 0 && !s.timed_out) {
      start_group_again(group, restarts);
      s.regrouping = false;
      s.stopping = Stopping{};
    }
  }
  group.finish();
  if (code && s.ended_well_after > 0)  // an elastic or asynchronous run that went on without the failed process
    say(
        fmt::format("{} ended with exit code 0 after process {} failed, so they went on without it (the summary "
                    "of a fast train run says so); launch's exit code is still that failure's, {}",
                    core::processes(s.ended_well_after), s.verdict.named, *code));
  // A restart of the group cut short by a signal or --timeout: the run's verdict is theirs.
  if (s.regrouping && !code) code = s.timed_out ? core::exit_code::launch_timeout : s.regroup_code;
  return code.value_or(core::exit_code::ok);
}

}  // namespace

CLI::App* add_launch_command(CLI::App& app, LaunchCommand& o) {
  CLI::App* cmd =
      app.add_subcommand("launch", "Start N local processes of a command as one multi-process run (docs/launch.md)");
  cmd->add_option("-n,--nprocs", o.processes,
                  "Number of processes to start, in [1, 1024]; with --hosts or --hostfile, default: their slots");
  cmd->add_option("--port", o.port,
                  "Rendezvous port (FAST_RENDEZVOUS): on 127.0.0.1, 0 a free one; with --hosts or --hostfile, on the "
                  "first host, 0 the lowest of --ports, else 29400")
      ->capture_default_str();
  cmd->add_flag("--insecure", o.insecure,
                "No keys: FAST_INSECURE=1, processes neither authenticate nor encrypt (warns)");
  cmd->add_option("--key", o.key_file,
                  "Key pair file of the processes (fast keygen) instead of one generated for the run");
  cmd->add_option("--allow", o.allow_file,
                  "Allow-list of public keys (needs --key; must hold its public key) instead of --key's alone");
  cmd->add_option("--grace", o.grace_seconds,
                  "Seconds the other processes get to end after the first failure or a forwarded signal, before "
                  "SIGTERM (then SIGKILL 5 s later)")
      ->capture_default_str();
  cmd->add_option("--timeout", o.timeout_seconds,
                  "Seconds the whole run may take; then SIGTERM, SIGKILL 5 s later, exit code 124. 0: no limit")
      ->capture_default_str();
  cmd->add_option("--restart,--max-restarts", o.restarts,
                  "Start a process that died again, N times in all (docs/launch.md, \"Restarts\"): alone, with its "
                  "rank and environment, or the whole group when a process lost a peer (exit code 3); 0: never")
      ->capture_default_str();
  cmd->add_option("--hosts", o.hosts,
                  "Hosts and their processes, NAME:N,NAME:N: each process started through --launcher on its host");
  cmd->add_option("--hostfile", o.hostfile,
                  "File of hosts, one per line: NAME[:N] or NAME slots=N [address=ADDR] [advertise=ADDR]");
  cmd->add_option("--launcher", o.launcher,
                  "With --hosts or --hostfile: the command template that runs a command on a host, with {host} and "
                  "{address} (e.g. 'ssh -p 2222 {host}', 'ip netns exec {host}'); default: 'ssh {host}'");
  cmd->add_option("--ports", o.ports,
                  "LO-HI: every process listens inside this range (FAST_PORTS), the rendezvous on its lowest port "
                  "unless --port; for firewalls (default: launch's own FAST_PORTS)");
  cmd->add_option("command", o.command,
                  "The command (searched on PATH) and its arguments; after -- when they hold options");
  cmd->footer(
      "Usage: fast launch -n N [options] -- COMMAND [ARGS...]\n"
      "Each process gets FAST_WORLD_SIZE=N, FAST_PROCESS_RANK=i, FAST_RENDEZVOUS=127.0.0.1:PORT, FAST_LAUNCHED=1,\n"
      "FAST_LOCAL_RANK and FAST_LOCAL_WORLD_SIZE (its index among the processes of its host, and their number),\n"
      "and FAST_KEY_FILE and FAST_ALLOW_FILE (a key pair generated for the run in a 0700 temporary folder that\n"
      "is removed at exit) or FAST_INSECURE=1. Each line of its stdout and stderr is written to launch's stdout\n"
      "and stderr prefixed with '[i] '. SIGINT, SIGTERM and SIGHUP are forwarded to every process.\n"
      "With --hosts or --hostfile, process i runs as 'LAUNCHER env FAST_...=... COMMAND' on its host, its\n"
      "key pair on its standard input (FAST_KEY_FILE=/dev/stdin), FAST_ALLOW_KEYS the public keys admitted,\n"
      "its lines prefixed '[HOST:i] '; the rendezvous is the first host's address on --port, else the lowest\n"
      "port of --ports, else 29400.\n"
      "With --restart N, a process that died is started again (alone, or the whole group), N times in all.\n"
      "Exit code: 0 if every process succeeded, else the first failed process's exit code (128 + signal if it\n"
      "was killed) that was not restarted, 124 when --timeout ended the run, 2 for bad input.");
  return cmd;
}

// Process `rank` on this host, directly.
ChildSpec local_child(const LaunchCommand& o, const RunPlan& plan, int rank, const fs::path& program,
                      const RunKeys& keys, bool alone) {
  Variables set = run_variables(o, plan, rank, alone);
  set.emplace_back("FAST_KEY_FILE", keys.key_file().string());
  set.emplace_back("FAST_ALLOW_FILE", keys.allow_file().string());
  return {program.string(), o.command, child_environment(set), {}, std::nullopt};
}

// Process `rank` on its host, through the launcher template: `LAUNCHER env NAME=VALUE... COMMAND`.
// The key pair goes through its standard input (FAST_KEY_FILE=/dev/stdin), never on a command
// line; the public keys admitted go in FAST_ALLOW_KEYS.
ChildSpec remote_child(const LaunchCommand& o, const RunPlan& plan, int rank, const RunKeys& keys, bool alone) {
  const LaunchHost& host = *plan.placement[static_cast<std::size_t>(rank)];
  std::vector<std::string> argv = launcher_words(launcher_template(o), host);
  const fs::path launcher = find_program(argv.front(), "--launcher's program");
  Variables set = run_variables(o, plan, rank, alone);
  set.emplace_back("FAST_ADVERTISE", host.advertise);
  std::optional<std::string> input;
  if (!o.insecure) {
    set.emplace_back("FAST_KEY_FILE", "/dev/stdin");
    std::string allowed;
    for (const keys::AllowedKey& k : keys::read_allow_file(keys.allow_file()))
      allowed += (allowed.empty() ? "" : ",") + k.public_key;
    set.emplace_back("FAST_ALLOW_KEYS", allowed);
    std::ifstream in(keys.key_file());
    input = std::string(std::istreambuf_iterator<char>(in), {});
  }
  argv.emplace_back("env");
  for (const auto& [name, value] : set)
    if (!value.empty()) argv.push_back(name + "=" + value);
  // `fast` is this very executable's path where this host has no `fast` on PATH (the same
  // installation on every host); any other command is left to the host's PATH.
  const std::string& command = o.command.front();
  argv.push_back(command == "fast" ? find_program(command).string() : command);
  argv.insert(argv.end(), o.command.begin() + 1, o.command.end());
  return {launcher.string(), std::move(argv), child_environment({}), fmt::format("{}:{}", host.name, rank),
          std::move(input)};
}

int run_launch(const LaunchCommand& given) {
  LaunchCommand o = given;
  // Without --ports, an inherited FAST_PORTS is the run's range (every process inherits it anyway).
  if (const char* inherited = std::getenv("FAST_PORTS"); o.ports.empty() && inherited != nullptr && *inherited) {
    o.ports = inherited;
    o.ports_source = "FAST_PORTS";
  }
  validate(o);
  const RunPlan plan = plan_run(o);
  if (const std::string warning = port_range_warning(o, plan); !warning.empty()) say(warning);
  const fs::path program = plan.hosts.empty() ? find_program(o.command.front()) : fs::path(o.command.front());
  SignalPipe signals({SIGINT, SIGTERM, SIGHUP, SIGCHLD});  // before the keys exist: they are removed on signals
  const RunKeys keys(o);
  if (o.insecure) {
    say("WARNING: --insecure: the processes neither authenticate nor encrypt their traffic (FAST_INSECURE=1); "
        "anyone who can reach their ports can join the run or read it");
  }
  auto specs_of = [&](const RunPlan& p, bool alone) {
    std::vector<ChildSpec> specs;
    for (int rank = 0; rank < p.processes; ++rank)
      specs.push_back(p.hosts.empty() ? local_child(o, p, rank, program, keys, alone)
                                      : remote_child(o, p, rank, keys, alone));
    return specs;
  };
  std::vector<ChildSpec> specs = specs_of(plan, false);  // a bad launcher template fails here, before anything starts
  const std::string where = plan.hosts.empty()
                                ? std::string()
                                : fmt::format(" on {} through '{}'", describe_hosts(plan), launcher_template(o));
  say(fmt::format("starting {} of '{}'{}, rendezvous {}{}{}", core::processes(plan.processes), program.string(), where,
                  plan.rendezvous, o.ports.empty() ? "" : ", ports " + o.ports,
                  o.insecure ? ", insecure" : fmt::format(", key {}", keys.key_file().string())));
  std::fflush(stdout);
  std::fflush(stderr);
  // Removes the keys and the processes' socket files should launch be killed (SIGKILL) before it can.
  LaunchJanitor janitor(keys.dir());
  // A new start of the whole group meets at a new free port where launch chose the first one (the
  // old one may still be held by the ended processes' sockets); else at the same address.
  Restarts restarts{.policy = RestartPolicy(o.restarts),
                    .specs = std::move(specs),
                    .alone = specs_of(plan, true),
                    .replan =
                        [&] {
                          const RunPlan p = o.port == 0 && o.ports.empty() && plan.hosts.empty() ? plan_run(o) : plan;
                          return std::pair(specs_of(p, false), specs_of(p, true));
                        },
                    .janitor = janitor};
  ProcessGroup group(restarts.specs);
  for (int rank = 0; rank < group.size(); ++rank) janitor.watch(group.pid(rank));
  return supervise(group, signals, o, restarts);
}

}  // namespace fast::cli
