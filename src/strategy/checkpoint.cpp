#include "fast/strategy/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <string>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/file_status.hpp"
#include "fast/wire/frame.hpp"

namespace fast::strategy {

static_assert(std::endian::native == std::endian::little, "checkpoint files are little-endian");

namespace {

constexpr char kMagic[8] = {'F', 'A', 'S', 'T', 'C', 'K', 'P', 'T'};
constexpr std::uint32_t kVersion = 3;
constexpr std::uint32_t kOldestVersion = 1;  // version 1: no f64 arrays; version 2: no texts
constexpr std::uint8_t kArray = 1;
constexpr std::uint8_t kInteger = 2;
constexpr std::uint8_t kDoubles = 3;
constexpr std::uint8_t kText = 4;
constexpr std::size_t kMaxName = 255;
constexpr std::uint64_t kMaxText = std::uint64_t{1} << 20;  // bytes of one text section

template <typename T>
void put(std::vector<std::byte>& out, const T& value) {
  const auto* p = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

void put_name(std::vector<std::byte>& out, std::string_view name) {
  FAST_ENFORCE(!name.empty() && name.size() <= kMaxName, "checkpoint: section name '{}' must have 1 to {} bytes", name,
               kMaxName);
  put(out, static_cast<std::uint16_t>(name.size()));
  const auto* p = reinterpret_cast<const std::byte*>(name.data());
  out.insert(out.end(), p, p + name.size());
}

// A length that runs past the end of the bytes: the mark of a file cut short where its checksum
// does not match (decode_checkpoint); an IoError like the others where it does.
class Overrun : public core::IoError {
 public:
  using core::IoError::IoError;
};

// Reads from a validated span; every read is checked against what remains (Overrun).
class Reader {
 public:
  Reader(std::span<const std::byte> bytes, std::string_view source) : bytes_(bytes), source_(source) {}
  template <typename T>
  T get(std::string_view what) {
    need(sizeof(T), what);
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::span<const std::byte> take(std::size_t n, std::string_view what) {
    need(n, what);
    const auto out = bytes_.subspan(at_, n);
    at_ += n;
    return out;
  }
  std::size_t remaining() const noexcept { return bytes_.size() - at_; }
  std::size_t offset() const noexcept { return at_; }

 private:
  void need(std::size_t n, std::string_view what) const {
    if (n > remaining())
      FAST_THROW(Overrun, "checkpoint '{}': truncated at byte {}: {} needs {} bytes, {} remain", source_, at_, what, n,
                 remaining());
  }
  std::span<const std::byte> bytes_;
  std::string_view source_;
  std::size_t at_ = 0;
};

template <typename T>
void put_array(std::vector<std::byte>& out, std::uint8_t kind, std::string_view name, const std::vector<T>& values) {
  put(out, kind);
  put_name(out, name);
  put(out, static_cast<std::uint64_t>(values.size()));
  const auto* p = reinterpret_cast<const std::byte*>(values.data());
  out.insert(out.end(), p, p + values.size() * sizeof(T));
}

// Checked against the bytes left before anything is allocated.
template <typename T>
std::vector<T> take_array(Reader& in, std::uint64_t count, std::string_view name, std::string_view source) {
  if (count > in.remaining() / sizeof(T))
    FAST_THROW(Overrun, "checkpoint '{}': array '{}' declares {} elements, only {} bytes remain", source, name, count,
               in.remaining());
  const auto data = in.take(static_cast<std::size_t>(count) * sizeof(T), "array data");
  std::vector<T> values(static_cast<std::size_t>(count));
  if (!values.empty()) std::memcpy(values.data(), data.data(), data.size());  // never memcpy from null
  return values;
}

// The header's version (checked: kOldestVersion to kVersion).
std::uint32_t check_header(std::span<const std::byte> bytes, std::string_view source) {
  constexpr std::size_t kMinimum = sizeof kMagic + 8 + 4;
  if (bytes.size() < kMinimum)
    FAST_THROW(core::IoError, "checkpoint '{}': {} bytes, expected at least {} (a truncated or empty file)", source,
               bytes.size(), kMinimum);
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    FAST_THROW(core::IoError, "checkpoint '{}': not a FAST checkpoint (expected the magic 'FASTCKPT')", source);
  std::uint32_t version = 0;
  std::memcpy(&version, bytes.data() + sizeof kMagic, sizeof version);
  if (version < kOldestVersion || version > kVersion)
    FAST_THROW(core::IoError, "checkpoint '{}': format version {}, expected {} to {}", source, version, kOldestVersion,
               kVersion);
  return version;
}

}  // namespace

std::vector<std::byte> encode_checkpoint(const Checkpoint& checkpoint) {
  std::size_t bytes = sizeof kMagic + 12;
  for (const auto& [name, values] : checkpoint.arrays) bytes += 11 + name.size() + values.size() * sizeof(float);
  for (const auto& [name, values] : checkpoint.doubles) bytes += 11 + name.size() + values.size() * sizeof(double);
  for (const auto& [name, value] : checkpoint.integers) bytes += 19 + name.size();
  for (const auto& [name, text] : checkpoint.texts) bytes += 11 + name.size() + text.size();
  std::vector<std::byte> out(sizeof kMagic);
  out.reserve(bytes);
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put(out, kVersion);
  put(out, static_cast<std::uint32_t>(checkpoint.arrays.size() + checkpoint.doubles.size() +
                                      checkpoint.integers.size() + checkpoint.texts.size()));
  for (const auto& [name, text] : checkpoint.texts) {  // first: read_checkpoint_texts reads only them
    FAST_ENFORCE(text.size() <= kMaxText, "checkpoint: text '{}' has {} bytes, expected at most {}", name, text.size(),
                 kMaxText);
    put_array(out, kText, name, std::vector<char>(text.begin(), text.end()));
  }
  for (const auto& [name, values] : checkpoint.arrays) put_array(out, kArray, name, values);
  for (const auto& [name, values] : checkpoint.doubles) put_array(out, kDoubles, name, values);
  for (const auto& [name, value] : checkpoint.integers) {
    put(out, kInteger);
    put_name(out, name);
    put(out, std::uint64_t{1});
    put(out, value);
  }
  put(out, wire::crc32(out));
  return out;
}

namespace {

// The sections of a file's body (its bytes without the CRC-32), every length checked against what
// is left; `at` says which section the walk had reached (for decode_checkpoint's message).
Checkpoint decode_sections(std::span<const std::byte> body, std::uint32_t version, std::string_view source,
                           std::string& at) {
  Reader in(body, source);
  (void)in.take(sizeof kMagic + 4, "the header");
  at = "its section count";
  const auto sections = in.get<std::uint32_t>("the section count");
  Checkpoint out;
  std::set<std::string, std::less<>> names;
  for (std::uint32_t k = 0; k < sections; ++k) {
    at = fmt::format("section {}", k);
    const auto kind = in.get<std::uint8_t>("a section kind");
    if (kind != kArray && kind != kInteger && (kind != kDoubles || version < 2) && (kind != kText || version < 3))
      FAST_THROW(core::IoError, "checkpoint '{}': section {} has kind {}, expected 1 (array){}", source, k, kind,
                 version < 2   ? ", 2 (integer)"
                 : version < 3 ? ", 2 (integer) or 3 (float64 array)"
                               : ", 2 (integer), 3 (float64 array) or 4 (text)");
    const auto length = in.get<std::uint16_t>("a section name length");
    if (length == 0 || length > kMaxName)
      FAST_THROW(core::IoError, "checkpoint '{}': section {} name length {}, expected 1 to {}", source, k, length,
                 kMaxName);
    const auto name_bytes = in.take(length, "a section name");
    std::string name(reinterpret_cast<const char*>(name_bytes.data()), name_bytes.size());
    at = fmt::format("section '{}'", name);
    if (!names.insert(name).second)
      FAST_THROW(core::IoError, "checkpoint '{}': section '{}' appears twice", source, name);
    const auto count = in.get<std::uint64_t>("an element count");
    if (kind == kInteger) {
      if (count != 1)
        FAST_THROW(core::IoError, "checkpoint '{}': integer '{}' has count {}, expected 1", source, name, count);
      out.integers.emplace(std::move(name), in.get<std::int64_t>("an integer"));
      continue;
    }
    if (kind == kText) {
      if (count > kMaxText)
        FAST_THROW(core::IoError, "checkpoint '{}': text '{}' declares {} bytes, expected at most {}", source, name,
                   count, kMaxText);
      const auto text = in.take(static_cast<std::size_t>(count), "a text");
      out.texts.emplace(std::move(name), std::string(reinterpret_cast<const char*>(text.data()), text.size()));
    } else if (kind == kDoubles)
      out.doubles.emplace(name, take_array<double>(in, count, name, source));
    else
      out.arrays.emplace(name, take_array<float>(in, count, name, source));
  }
  if (in.remaining() != 0)
    FAST_THROW(core::IoError, "checkpoint '{}': {} bytes after the last of {} sections, expected none", source,
               in.remaining(), sections);
  return out;
}

}  // namespace

Checkpoint decode_checkpoint(std::span<const std::byte> bytes, std::string_view source) {
  const std::uint32_t version = check_header(bytes, source);
  const auto body = bytes.first(bytes.size() - 4);
  std::uint32_t stored = 0;
  std::memcpy(&stored, bytes.data() + body.size(), sizeof stored);
  const std::uint32_t computed = wire::crc32(body);
  std::string at;
  if (stored == computed) return decode_sections(body, version, source, at);
  // The checksum does not match: the sections, walked as they are, tell a file cut short (a length
  // that runs past the end) from one whose bytes changed.
  try {
    (void)decode_sections(body, version, source, at);
  } catch (const Overrun&) {
    FAST_THROW(core::IoError,
               "checkpoint '{}': truncated: {} bytes, and its sections run past the end at {}: a file cut short "
               "or partly written (or a damaged length)",
               source, bytes.size(), at);
  } catch (const core::IoError&) {  // another inconsistency: the checksum says it
  }
  FAST_THROW(core::IoError,
             "checkpoint '{}': checksum {:#010x} does not match the content's {:#010x} (a corrupt or partly written "
             "file)",
             source, stored, computed);
}

void write_file_atomically(const std::filesystem::path& file, std::span<const std::byte> bytes, std::string_view what) {
  // A name of this process and call: two workers of one process may write the same file at once
  // (an asynchronous run's manifest, written by whichever worker completes a step folder).
  static std::atomic<std::uint64_t> calls{0};
  const std::filesystem::path temporary =
      file.string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(calls.fetch_add(1));
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    FAST_THROW(core::IoError, "{} '{}': cannot create it: {}", what, temporary.string(), std::strerror(errno));
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ::ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      std::filesystem::remove(temporary);
      FAST_THROW(core::IoError, "{} '{}': write failed after {} of {} bytes: {}", what, temporary.string(), written,
                 bytes.size(), std::strerror(error));
    }
    written += static_cast<std::size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  if (!synced) {
    std::filesystem::remove(temporary);
    FAST_THROW(core::IoError, "{} '{}': fsync failed: {}", what, temporary.string(), std::strerror(error));
  }
  std::error_code ec;
  std::filesystem::rename(temporary, file, ec);
  if (ec) {
    std::filesystem::remove(temporary);
    FAST_THROW(core::IoError, "{} '{}': cannot rename the written file into place: {}", what, file.string(),
               ec.message());
  }
}

void write_checkpoint_file(const std::filesystem::path& file, const Checkpoint& checkpoint) {
  write_file_atomically(file, encode_checkpoint(checkpoint), "checkpoint");
}

Checkpoint read_checkpoint_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in || std::filesystem::is_directory(core::file_status_of(file, "checkpoint")))
    FAST_THROW(core::IoError, "checkpoint '{}': cannot read it (missing or a folder)", file.string());
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) FAST_THROW(core::IoError, "checkpoint '{}': read failed", file.string());
  return decode_checkpoint(std::as_bytes(std::span<const char>(raw)), file.string());
}

std::map<std::string, std::string, std::less<>> read_checkpoint_texts(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in || std::filesystem::is_directory(core::file_status_of(file, "checkpoint")))
    FAST_THROW(core::IoError, "checkpoint '{}': cannot read it (missing or a folder)", file.string());
  const std::string source = file.string();
  auto get = [&](void* out, std::size_t n, std::string_view what) {
    if (!in.read(static_cast<char*>(out), static_cast<std::streamsize>(n)))
      FAST_THROW(core::IoError, "checkpoint '{}': truncated: {} needs {} bytes", source, what, n);
  };
  char magic[sizeof kMagic];
  get(magic, sizeof magic, "the magic");
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
    FAST_THROW(core::IoError, "checkpoint '{}': not a FAST checkpoint (expected the magic 'FASTCKPT')", source);
  std::uint32_t version = 0, sections = 0;
  get(&version, sizeof version, "the version");
  if (version < kOldestVersion || version > kVersion)
    FAST_THROW(core::IoError, "checkpoint '{}': format version {}, expected {} to {}", source, version, kOldestVersion,
               kVersion);
  get(&sections, sizeof sections, "the section count");
  std::map<std::string, std::string, std::less<>> texts;
  for (std::uint32_t k = 0; k < sections && version >= 3; ++k) {
    std::uint8_t kind = 0;
    if (!in.read(reinterpret_cast<char*>(&kind), 1) || kind != kText) break;  // the texts come first
    std::uint16_t length = 0;
    get(&length, sizeof length, "a section name length");
    if (length == 0 || length > kMaxName)
      FAST_THROW(core::IoError, "checkpoint '{}': section {} name length {}, expected 1 to {}", source, k, length,
                 kMaxName);
    std::string name(length, '\0');
    get(name.data(), length, "a section name");
    std::uint64_t count = 0;
    get(&count, sizeof count, "an element count");
    if (count > kMaxText)
      FAST_THROW(core::IoError, "checkpoint '{}': text '{}' declares {} bytes, expected at most {}", source, name,
                 count, kMaxText);
    std::string text(static_cast<std::size_t>(count), '\0');
    get(text.data(), text.size(), "a text");
    texts.insert_or_assign(std::move(name), std::move(text));
  }
  return texts;
}

}  // namespace fast::strategy
