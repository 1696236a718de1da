#pragma once
// `fast rendezvous`: serves the rendezvous of a multi-host zmq run without running a worker.

#include <CLI/CLI.hpp>

namespace fast::cli {

// Adds the subcommand to app; its callback runs the server and returns the exit code through `code`.
void add_rendezvous_command(CLI::App& app, int& code);

}  // namespace fast::cli
