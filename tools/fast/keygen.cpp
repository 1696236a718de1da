#include "keygen.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "fast/core/error.hpp"
#include "fast/core/exit_code.hpp"
#include "fast/runtime/zmq/keys.hpp"

namespace fast::cli {

namespace {

namespace fs = std::filesystem;

std::string hostname() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 && name[0] != '\0' ? std::string(name) : std::string("unknown-host");
}

}  // namespace

CLI::App* add_keygen_command(CLI::App& app, KeygenCommand& o) {
  CLI::App* cmd = app.add_subcommand("keygen", "Write a CURVE key pair for multi-process runs (docs/launch.md)");
  cmd->add_option("--out", o.out, "Key pair file to write (mode 0600, keep it secret); PATH.pub gets its public key")
      ->required();
  cmd->add_flag("--force", o.force, "Overwrite PATH and PATH.pub if they exist");
  cmd->footer(
      "PATH.pub holds one allow-list line, '<public key> <hostname>'. Gather the .pub lines of every host of a\n"
      "run into one allow-list file (--allow FILE, FAST_ALLOW_FILE) and give each host its own key file\n"
      "(--key PATH, FAST_KEY_FILE).");
  return cmd;
}

int run_keygen(const KeygenCommand& o) {
  const fs::path key_path = o.out;
  const fs::path pub_path = o.out + ".pub";
  for (const fs::path& p : {key_path, pub_path}) {
    std::error_code ec;
    FAST_ENFORCE(!fs::is_directory(p, ec), "fast keygen: '{}' is a folder; --out expects the path of a file to write",
                 p.string());
    if (!o.force && fs::exists(fs::symlink_status(p, ec))) {
      FAST_THROW(core::InvalidArgument, "fast keygen: '{}' already exists; not overwriting it (--force does)",
                 p.string());
    }
  }
  const runtime::zmq::KeyPair keys = runtime::zmq::generate_key_pair();
  const std::string line = keys.public_key + " " + hostname();
  runtime::zmq::write_key_file(key_path, keys, o.force);
  // The .pub file is exactly one allow-list line, so that `cat *.pub > allow.txt` builds a list.
  FILE* pub = std::fopen(pub_path.c_str(), "w");
  const bool ok = pub != nullptr && std::fprintf(pub, "%s\n", line.c_str()) > 0;
  if (pub == nullptr || std::fclose(pub) != 0 || !ok) {
    FAST_THROW(core::IoError, "fast keygen: cannot write '{}'", pub_path.string());
  }
  std::printf("wrote the key pair to %s (mode 0600: keep it secret) and its public key to %s\n", key_path.c_str(),
              pub_path.c_str());
  std::printf("public key: %s\n\n", keys.public_key.c_str());
  std::printf("Add this line to the run's allow-list on every host (--allow FILE, or FAST_ALLOW_FILE):\n  %s\n",
              line.c_str());
  std::printf("and give this host's processes the key pair: --key %s (or FAST_KEY_FILE).\n", key_path.c_str());
  return core::exit_code::ok;
}

}  // namespace fast::cli
