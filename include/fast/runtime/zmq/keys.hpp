#pragma once
// CURVE key pairs, key files and allow-lists of the zmq runtime (docs/launch.md).
//
// Keys are Z85 text (ZeroMQ's 85-character alphabet), 40 characters for 32 bytes.
// Key file (`fast keygen`, mode 0600, one per host or per run):
//   # FAST CURVE key pair (fast keygen). Keep it secret.
//   public = "<40 Z85 characters>"
//   secret = "<40 Z85 characters>"
// Allow-list file (the public keys a run admits): one key per line, optionally followed by
// whitespace and a free-text name (e.g. the host); lines starting with '#' and blank lines are ignored.
//
// Errors: bad content is InvalidArgument naming the file, the line, what was expected and what was
// got (a secret key's value is never printed); a file that cannot be read or written is IoError.
// All functions are thread-safe (no shared state).

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace fast::runtime::zmq {

struct KeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters
};

struct AllowedKey {
  std::string public_key;  // Z85, 40 characters
  std::string name;        // free text after the key on its line; may be empty
};

// Whether key is 40 characters of the Z85 alphabet that decode to 32 bytes.
bool valid_z85_key(std::string_view key);

// A fresh key pair (zmq_curve_keypair). IoError if this libzmq was built without CURVE.
KeyPair generate_key_pair();

// Writes the key file with mode 0600. An existing file is an InvalidArgument unless overwrite
// (then it is replaced and its mode set to 0600). Keys that are not valid Z85 are InvalidArgument.
void write_key_file(const std::filesystem::path& path, const KeyPair& keys, bool overwrite = false);

// Reads a key file; checks both keys and that the public key belongs to the secret key. Logs a
// warning (core::log, warn) if the file is readable by group or others.
KeyPair read_key_file(const std::filesystem::path& path);

// Reads an allow-list; a file with no key is an error.
std::vector<AllowedKey> read_allow_file(const std::filesystem::path& path);

// Writes an allow-list (mode 0644: public keys only), one "<key> <name>" line per entry after a
// comment line. Invalid keys and names holding a line break are InvalidArgument.
void write_allow_file(const std::filesystem::path& path, const std::vector<AllowedKey>& keys);

}  // namespace fast::runtime::zmq
