#pragma once
// `fast keygen --out PATH [--force]`: a CURVE key pair for the zmq runtime (docs/launch.md).

#include <string>

namespace CLI {
class App;
}

namespace fast::cli {

struct KeygenCommand {
  std::string out;     // key pair file, written 0600; its public line goes to OUT.pub
  bool force = false;  // overwrite OUT and OUT.pub
};

// Adds the `keygen` subcommand to app, parsing into options.
CLI::App* add_keygen_command(CLI::App& app, KeygenCommand& options);

// Writes OUT (the key pair, 0600) and OUT.pub ("<public key> <hostname>"), prints the public key
// and how to use it; returns the exit code (0). An existing file without --force is InvalidArgument,
// checked for both files before either is written.
int run_keygen(const KeygenCommand& options);

}  // namespace fast::cli
