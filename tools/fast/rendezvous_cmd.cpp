#include "rendezvous_cmd.hpp"

#include "command_line.hpp"
#include "fast/core/exit_code.hpp"
#include "fast/core/log.hpp"
#include "fast/runtime/zmq/serve.hpp"

namespace fast::cli {

CLI::App* add_rendezvous_command(CLI::App& app, runtime::ProcessOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "rendezvous",
      "Serve the rendezvous of a zmq run across hosts without running a worker: every host then runs `fast train "
      "--runtime zmq --rendezvous HOST:PORT --world-size N` (docs/launch.md)");
  cmd->add_option("--listen", options.rendezvous, "HOST:PORT to listen on: the processes' --rendezvous")->required();
  cmd->add_option("--world-size", options.world_size, "number of processes to wait for (>= 1)")->required();
  cmd->add_option("--workers-per-process", options.workers_per_process, "workers in each process (default 1)");
  cmd->add_option("--key", options.key_file, "this server's key pair (fast keygen; default FAST_KEY_FILE)");
  cmd->add_option("--allow", options.allow_file,
                  "public keys admitted, one per line, this server's key first (default FAST_ALLOW_FILE)");
  cmd->add_flag("--insecure", options.insecure, "no authentication and no encryption (warns)");
  cmd->add_option("--timeout", options.rendezvous_timeout_seconds,
                  "seconds to wait for every process (default FAST_RENDEZVOUS_TIMEOUT, 60)");
  cmd->footer(environment_help({"FAST_LOG_LEVEL", "FAST_KEY_FILE", "FAST_ALLOW_FILE", "FAST_ALLOW_KEYS",
                                "FAST_INSECURE", "FAST_RENDEZVOUS_TIMEOUT"}));
  return cmd;
}

int run_rendezvous(const runtime::ProcessOptions& options) {
  runtime::zmq::serve_rendezvous(options);
  core::log(core::LogLevel::info, "rendezvous: {} processes met at {}", options.world_size, options.rendezvous);
  return core::exit_code::ok;
}

}  // namespace fast::cli
