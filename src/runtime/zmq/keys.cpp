#include "fast/runtime/zmq/keys.hpp"

#include <sys/stat.h>
#include <zmq.h>

#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"

namespace fast::runtime::zmq {

namespace fs = std::filesystem;

bool valid_z85_key(std::string_view key) {
  if (key.size() != 40) return false;
  const std::string text(key);
  std::uint8_t decoded[32];
  return zmq_z85_decode(decoded, text.c_str()) != nullptr;
}

KeyPair generate_key_pair() {
  char pub[41] = {}, sec[41] = {};
  FAST_ENFORCE_AS(core::IoError, zmq_curve_keypair(pub, sec) == 0,
                  "keygen: this libzmq has no CURVE support (zmq_curve_keypair failed)");
  return {pub, sec};
}

void write_key_file(const fs::path& path, const KeyPair& keys, bool overwrite) {
  FAST_ENFORCE(overwrite || !fs::exists(path), "key file '{}' exists already (refusing to overwrite a key)",
               path.string());
  FAST_ENFORCE(valid_z85_key(keys.public_key) && valid_z85_key(keys.secret_key),
               "key file '{}': expected two 40-character Z85 keys", path.string());
  fs::remove(path);
  const mode_t old = umask(077);
  std::ofstream out(path);
  umask(old);
  out << "# FAST CURVE key pair (fast keygen). Keep it secret.\n"
      << "public = \"" << keys.public_key << "\"\nsecret = \"" << keys.secret_key << "\"\n";
  FAST_ENFORCE_AS(core::IoError, out.good(), "cannot write key file '{}'", path.string());
  out.close();
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
}

KeyPair read_key_file(const fs::path& path) {
  std::ifstream in(path);
  FAST_ENFORCE(in.good(), "key file '{}': cannot be read (make one with `fast keygen --out FILE`)", path.string());
  if ((fs::status(path).permissions() & (fs::perms::group_read | fs::perms::others_read)) != fs::perms::none)
    core::log(core::LogLevel::warn, "key file '{}' is readable by other users: chmod 600 it", path.string());
  const std::regex line_re("^\\s*(public|secret)\\s*=\\s*\"([^\"]*)\"\\s*$");
  KeyPair keys;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[line.find_first_not_of(" \t")] == '#') continue;
    std::smatch m;
    FAST_ENFORCE(std::regex_match(line, m, line_re), "key file '{}' line {}: expected public = \"KEY\" or secret = \"KEY\", got '{}'",
                 path.string(), n, line);
    FAST_ENFORCE(valid_z85_key(m[2].str()), "key file '{}' line {}: expected a 40-character Z85 key, got {} characters",
                 path.string(), n, m[2].str().size());
    (m[1] == "public" ? keys.public_key : keys.secret_key) = m[2];
  }
  FAST_ENFORCE(!keys.public_key.empty() && !keys.secret_key.empty(),
               "key file '{}': expected both a public and a secret key", path.string());
  return keys;
}

std::vector<AllowedKey> read_allow_file(const fs::path& path) {
  std::ifstream in(path);
  FAST_ENFORCE(in.good(), "allow-list '{}': cannot be read", path.string());
  std::vector<AllowedKey> keys;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const auto start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos || line[start] == '#') continue;  // '#' is also a Z85 character: comments start lines
    const auto end = line.find_first_of(" \t\r", start);
    const std::string key = line.substr(start, end == std::string::npos ? std::string::npos : end - start);
    FAST_ENFORCE(valid_z85_key(key), "allow-list '{}' line {}: expected a 40-character Z85 public key, got '{}'",
                 path.string(), n, key);
    std::string name;
    if (end != std::string::npos) {
      const auto ns = line.find_first_not_of(" \t\r", end);
      if (ns != std::string::npos) name = line.substr(ns, line.find_last_not_of(" \t\r") - ns + 1);
    }
    keys.push_back({key, name});
  }
  FAST_ENFORCE(!keys.empty(), "allow-list '{}': expected at least one public key, got none", path.string());
  return keys;
}

void write_allow_file(const fs::path& path, const std::vector<AllowedKey>& keys) {
  std::ofstream out(path);
  out << "# FAST allow-list: the public keys admitted to a run, one per line (the rendezvous host's first)\n";
  for (const AllowedKey& k : keys) out << k.public_key << (k.name.empty() ? "" : " " + k.name) << "\n";
  FAST_ENFORCE_AS(core::IoError, out.good(), "cannot write allow-list '{}'", path.string());
}

}  // namespace fast::runtime::zmq
