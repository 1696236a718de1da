#include "fast/runtime/zmq/keys.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>

#include <zmq.h>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"

namespace fast::runtime::zmq {

namespace {

constexpr std::string_view kZ85Alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
constexpr std::size_t kKeyChars = 40;
constexpr std::string_view kKeyFileHeader = "# FAST CURVE key pair (fast keygen). Keep it secret.\n";

// Why key is not a valid Z85 key ("" if it is), e.g. "39 characters" or "character '~' at position 12".
// show_chars: whether the offending character may be printed (false for secret keys).
std::string z85_problem(std::string_view key, bool show_chars = true) {
  if (key.size() != kKeyChars) return fmt::format("{} characters", key.size());
  for (std::size_t group = 0; group < kKeyChars; group += 5) {
    std::uint64_t value = 0;
    for (std::size_t i = group; i < group + 5; ++i) {
      const std::size_t digit = kZ85Alphabet.find(key[i]);
      if (digit == std::string_view::npos) {
        return show_chars ? fmt::format("character '{}' at position {}, not in the Z85 alphabet", key[i], i + 1)
                          : fmt::format("a character not in the Z85 alphabet at position {}", i + 1);
      }
      value = value * 85 + digit;
    }
    if (value > 0xFFFFFFFFu)
      return fmt::format("characters {}-{} that decode to more than 32 bits", group + 1, group + 5);
  }
  return {};
}

// Checks one key; `what` names it in the message ("key file 'x' line 2: public key").
void enforce_key(std::string_view key, const std::string& what, bool secret) {
  const std::string problem = z85_problem(key, !secret);
  if (!problem.empty()) {
    FAST_THROW(core::InvalidArgument, "{}: expected {} characters of the Z85 alphabet, got {}", what, kKeyChars,
               problem);
  }
}

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

std::vector<std::string> read_lines(const std::filesystem::path& path, std::string_view kind) {
  std::ifstream in(path);
  if (!in) {
    FAST_THROW(core::InvalidArgument, "{} '{}': cannot open it ({})", kind, path.string(), std::strerror(errno));
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  if (in.bad()) FAST_THROW(core::IoError, "{} '{}': read failed", kind, path.string());
  return lines;
}

// What a malformed line of a key file is shown as: its length only. Its text may hold a secret
// key (`secret "KEY"` without its '=', or a bare key), and a Z85 key may hold ':' and '=', the
// separators a first word would be cut at: no part of the line is quoted.
std::string shown_as(std::string_view line) {
  return fmt::format("a line of {} characters that names neither (not shown: it may hold a secret key)", line.size());
}

// One `name = "value"` line of a key file; throws naming the line otherwise. No message quotes
// more of a line than its first word: the line may hold a secret key.
std::pair<std::string, std::string> parse_assignment(std::string_view line, const std::string& where) {
  const auto eq = line.find('=');
  const std::string name(trim(line.substr(0, eq == std::string_view::npos ? line.size() : eq)));
  if (name != "public" && name != "secret") {
    FAST_THROW(core::InvalidArgument, "{}: expected `public = \"...\"` or `secret = \"...\"`, got {}", where,
               shown_as(trim(line)));
  }
  const std::string_view value = eq == std::string_view::npos ? std::string_view{} : trim(line.substr(eq + 1));
  if (eq == std::string_view::npos || value.size() < 2 || value.front() != '"' || value.back() != '"') {
    FAST_THROW(core::InvalidArgument, "{}: expected `{} = \"<{} Z85 characters>\"` (a quoted key), got {}", where, name,
               kKeyChars, name == "secret" ? "something else" : fmt::format("'{}'", trim(line)));
  }
  return {name, std::string(value.substr(1, value.size() - 2))};
}

// Once per file and process (the key file is read by every socket of a process).
void warn_if_shared(const std::filesystem::path& path) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077) != 0) {
    const std::lock_guard lock(mutex);
    if (!warned.insert(path.string()).second) return;
    core::log(core::LogLevel::warn, "key file '{}' is readable by group or others (mode {:04o}); run: chmod 600 '{}'",
              path.string(), st.st_mode & 07777, path.string());
  }
}

// Writes text to path: a new file (O_EXCL) unless overwrite, then chmod to mode whatever the umask.
void write_file(const std::filesystem::path& path, const std::string& text, mode_t mode, bool overwrite,
                std::string_view kind) {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (overwrite ? O_TRUNC : O_EXCL);
  const int fd = ::open(path.c_str(), flags, mode);
  if (fd < 0 && errno == EEXIST) {
    FAST_THROW(core::InvalidArgument, "{} '{}' already exists; refusing to overwrite it", kind, path.string());
  }
  if (fd < 0) FAST_THROW(core::IoError, "{} '{}': cannot create it ({})", kind, path.string(), std::strerror(errno));
  bool ok = ::fchmod(fd, mode) == 0;
  std::size_t done = 0;
  while (ok && done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  const int saved = errno;
  ok = (::close(fd) == 0) && ok;
  if (!ok) FAST_THROW(core::IoError, "{} '{}': write failed ({})", kind, path.string(), std::strerror(saved));
}

}  // namespace

bool valid_z85_key(std::string_view key) { return z85_problem(key).empty(); }

KeyPair generate_key_pair() {
  char pub[kKeyChars + 1] = {};
  char sec[kKeyChars + 1] = {};
  if (!::zmq_has("curve") || ::zmq_curve_keypair(pub, sec) != 0) {
    int major = 0, minor = 0, patch = 0;
    ::zmq_version(&major, &minor, &patch);
    FAST_THROW(core::IoError, "cannot generate a CURVE key pair: libzmq {}.{}.{} was built without CURVE ({})", major,
               minor, patch, ::zmq_strerror(::zmq_errno()));
  }
  return {pub, sec};
}

void write_key_file(const std::filesystem::path& path, const KeyPair& keys, bool overwrite) {
  const std::string what = fmt::format("key file '{}'", path.string());
  enforce_key(keys.public_key, what + ": public key", false);
  enforce_key(keys.secret_key, what + ": secret key", true);
  write_file(path,
             fmt::format("{}public = \"{}\"\nsecret = \"{}\"\n", kKeyFileHeader, keys.public_key, keys.secret_key),
             0600, overwrite, "key file");
}

KeyPair read_key_file(const std::filesystem::path& path) {
  const std::vector<std::string> lines = read_lines(path, "key file");
  std::optional<std::string> keys[2];  // public, secret
  std::size_t line_of[2] = {0, 0};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = trim(lines[i]);
    if (line.empty() || line.front() == '#') continue;
    const std::string where = fmt::format("key file '{}' line {}", path.string(), i + 1);
    // A bare key (a public one, optionally named: the .pub file or an allow-list given in its place;
    // or a secret one without its `secret = "..."`), never quoted.
    FAST_ENFORCE(!z85_problem(line.substr(0, line.find_first_of(" \t"))).empty(),
                 "{}: expected `public = ...` and `secret = ...` lines, got a bare key (not shown): a public key "
                 "file (`fast keygen` writes it as FILE.pub) or an allow-list, where --key (FAST_KEY_FILE, `key`) "
                 "takes the key pair file itself (FILE, without .pub); or a secret key, which goes in a line "
                 "`secret = \"...\"`",
                 where);
    auto [name, value] = parse_assignment(line, where);
    const int slot = name == "public" ? 0 : 1;
    if (keys[slot]) {
      FAST_THROW(core::InvalidArgument, "{}: expected one `{} = ...` line, got a second one (first on line {})", where,
                 name, line_of[slot]);
    }
    enforce_key(value, fmt::format("{}: {} key", where, name), slot == 1);
    keys[slot] = value;
    line_of[slot] = i + 1;
  }
  for (int slot = 0; slot < 2; ++slot) {
    if (!keys[slot]) {
      const char* name = slot == 0 ? "public" : "secret";
      FAST_THROW(core::InvalidArgument, "key file '{}': expected a line `{} = \"<{} Z85 characters>\"`, got none",
                 path.string(), name, kKeyChars);
    }
  }
  char derived[kKeyChars + 1] = {};
  if (::zmq_curve_public(derived, keys[1]->c_str()) == 0 && *keys[0] != derived) {
    FAST_THROW(core::InvalidArgument,
               "key file '{}' line {}: expected the public key of the secret key on line {} ({}), got {}",
               path.string(), line_of[0], line_of[1], derived, *keys[0]);
  }
  warn_if_shared(path);  // once it is known to hold a secret key
  return {*keys[0], *keys[1]};
}

std::vector<AllowedKey> read_allow_file(const std::filesystem::path& path) {
  const std::vector<std::string> lines = read_lines(path, "allow file");
  std::vector<AllowedKey> keys;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = trim(lines[i]);
    if (line.empty() || line.front() == '#') continue;
    const auto end = line.find_first_of(" \t");
    const std::string_view key = line.substr(0, end);
    const std::string problem = z85_problem(key);
    if (!problem.empty()) {
      FAST_THROW(core::InvalidArgument,
                 "allow file '{}' line {}: expected a public key ({} characters of the Z85 alphabet) optionally "
                 "followed by a name, got '{}' ({})",
                 path.string(), i + 1, kKeyChars, key, problem);
    }
    keys.push_back({std::string(key), std::string(end == std::string_view::npos ? "" : trim(line.substr(end)))});
  }
  if (keys.empty()) {
    FAST_THROW(core::InvalidArgument,
               "allow file '{}': expected at least one public key (one per line: <key> [name]), got none",
               path.string());
  }
  return keys;
}

void write_allow_file(const std::filesystem::path& path, const std::vector<AllowedKey>& keys) {
  if (keys.empty()) {
    FAST_THROW(core::InvalidArgument, "allow file '{}': expected at least one public key to write, got none",
               path.string());
  }
  std::string text = "# FAST allow-list: the public keys admitted to the run, one per line, then an optional name.\n";
  for (std::size_t i = 0; i < keys.size(); ++i) {
    enforce_key(keys[i].public_key, fmt::format("allow file '{}': key {}", path.string(), i + 1), false);
    if (keys[i].name.find_first_of("\r\n") != std::string::npos) {
      FAST_THROW(core::InvalidArgument,
                 "allow file '{}': key {}: expected a name on one line, got one with a line break", path.string(),
                 i + 1);
    }
    text += keys[i].name.empty() ? keys[i].public_key + "\n" : keys[i].public_key + " " + keys[i].name + "\n";
  }
  write_file(path, text, 0644, true, "allow file");
}

}  // namespace fast::runtime::zmq
