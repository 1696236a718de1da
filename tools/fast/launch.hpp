#pragma once
// `fast launch -n N [options] -- COMMAND [ARGS...]`: N local processes of one command, with the
// environment of a multi-process run (docs/launch.md).

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace fast::cli {

struct LaunchCommand {
  int processes = -1;                // N, >= 1; -1: -n not given (with --hosts: their slots)
  std::vector<std::string> command;  // program (searched on PATH) and its arguments
  int port = 0;                      // rendezvous port on 127.0.0.1; 0: a free one
  bool insecure = false;             // FAST_INSECURE=1, no keys
  std::string key_file;              // given key pair; empty: one generated for the run
  std::string allow_file;            // given allow-list; empty: the run key's public key only
  double grace_seconds = 30;         // after the first failure, before SIGTERM
  double timeout_seconds = 0;        // whole run; 0: none
  int restarts = 0;                  // --restart N: processes that died are started again, N times in all
  // Across hosts (docs/launch.md, "Across hosts"): the processes go to these hosts in order, each
  // started through the launcher template; empty: every process on this host, directly.
  std::string hosts;                    // "a:4,b:4"
  std::string hostfile;                 // one host per line (hosts.hpp)
  std::string launcher;  // command template that runs a command on {host}; empty: "ssh {host}" (with hosts only)
  std::string ports;                    // "LO-HI": FAST_PORTS of every process, and the rendezvous port
  // Where `ports` came from, as messages name it: "--ports", or "FAST_PORTS" when run_launch took
  // the range from launch's own environment (no --ports given).
  std::string ports_source = "--ports";
};

// Adds the `launch` subcommand to app, parsing into options.
CLI::App* add_launch_command(CLI::App& app, LaunchCommand& options);

// Checks options (InvalidArgument before anything starts), runs the processes until every one
// ended and returns launch's exit code (fast/core/exit_code.hpp): ok (0) if all succeeded, else the
// first failed process's code (killed_by(signal) = 128 + signal if killed), launch_timeout (124)
// when --timeout stopped the run first.
int run_launch(const LaunchCommand& options);

}  // namespace fast::cli
