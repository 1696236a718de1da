#pragma once
// `fast rendezvous`: serves the rendezvous of a multi-host zmq run without running a worker
// (docs/launch.md, "Across hosts").

#include <CLI/CLI.hpp>

#include "fast/runtime/launcher.hpp"

namespace fast::cli {

// Adds the subcommand; its options land in `options` (which must outlive parsing).
CLI::App* add_rendezvous_command(CLI::App& app, runtime::ProcessOptions& options);
// Serves until every process got the table; 0. Errors are thrown (main turns them into exit codes).
int run_rendezvous(const runtime::ProcessOptions& options);

}  // namespace fast::cli
