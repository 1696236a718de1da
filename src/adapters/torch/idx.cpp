#include "fast/adapters/torch/idx.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include <zlib.h>

#include "fast/core/error.hpp"
#include "fast/core/long_lived.hpp"

namespace fast::torch {

namespace {

constexpr std::size_t kChunk = std::size_t{1} << 20;        // bytes per gzread
constexpr std::size_t kMaxReserve = std::size_t{64} << 20;  // reserve at most this before data arrives
constexpr std::uint64_t kDeflateMaxRatio = 1032;            // deflate expands at most 1032:1

struct GzClose {
  void operator()(gzFile_s* f) const noexcept { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzClose>;

// An open IDX file: gzread with zlib errors turned into IoError naming the file.
class Reader {
 public:
  explicit Reader(const std::filesystem::path& path) : path_(path.string()) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) {
      FAST_THROW(IoError,
                 "{}: cannot open IDX file: expected an existing IDX file (gzip or uncompressed), got no such file",
                 path_);
    }
    if (std::filesystem::is_directory(status)) {
      FAST_THROW(IoError, "{}: cannot open IDX file: expected an IDX file (gzip or uncompressed), got a directory",
                 path_);
    }
    errno = 0;
    file_.reset(gzopen(path_.c_str(), "rb"));
    if (!file_) {
      FAST_THROW(IoError, "{}: cannot open IDX file: {}", path_, errno != 0 ? std::strerror(errno) : "out of memory");
    }
    gzbuffer(file_.get(), 256 * 1024);
    file_bytes_ = std::filesystem::file_size(path, ec);
    if (ec) file_bytes_ = 0;
  }

  // The bytes of the file on disk (compressed or not); 0 when unknown.
  std::uint64_t file_bytes() const { return file_bytes_; }

  const std::string& path() const { return path_; }

  // Reads up to n bytes into out; returns the count (< n only at the end of the data).
  std::size_t read(void* out, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
      const auto want = static_cast<unsigned>(std::min(n - done, kChunk));
      const int got = gzread(file_.get(), static_cast<char*>(out) + done, want);
      check(got);
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    return done;
  }

 private:
  void check(int got) {
    int errnum = Z_OK;
    const char* message = gzerror(file_.get(), &errnum);
    if (got >= 0 && (errnum == Z_OK || errnum == Z_STREAM_END)) return;
    if (errnum == Z_ERRNO) {
      FAST_THROW(IoError, "{}: cannot read IDX file: {}", path_, std::strerror(errno));
    }
    // Z_DATA_ERROR (bad deflate data or CRC), Z_BUF_ERROR (compressed data cut short), Z_MEM_ERROR.
    // zlib's message begins with the path, which the error names already.
    std::string_view what = message != nullptr ? message : "?";
    if (const std::string prefix = path_ + ": "; what.starts_with(prefix)) what.remove_prefix(prefix.size());
    FAST_THROW(IoError, "{}: corrupt gzip stream: expected valid gzip data, zlib reports '{}' (error {})", path_, what,
               errnum);
  }

  std::string path_;
  GzFile file_;
  std::uint64_t file_bytes_ = 0;
};

std::uint32_t big_endian(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

// Reads and checks the magic and the sizes; returns the sizes.
std::vector<std::uint32_t> read_header(Reader& in, std::uint32_t expected_magic, std::string_view what) {
  std::array<std::uint8_t, 4> word{};
  const std::size_t got_magic = in.read(word.data(), 4);
  if (got_magic < 4) {
    FAST_THROW(InvalidArgument, "{}: truncated IDX header: expected a 4-byte magic, got {} bytes", in.path(),
               got_magic);
  }
  const std::uint32_t magic = big_endian(word.data());
  const unsigned expected_dims = expected_magic & 0xFF;
  if ((magic & 0xFFFFFF00u) != (expected_magic & 0xFFFFFF00u)) {
    FAST_THROW(InvalidArgument,
               "{}: wrong IDX magic: expected 0x{:08x} ({}: unsigned bytes, {} dimensions), got 0x{:08x}", in.path(),
               expected_magic, what, expected_dims, magic);
  }
  const unsigned dims = magic & 0xFF;
  if (dims != expected_dims) {
    FAST_THROW(InvalidArgument,
               "{}: wrong number of IDX dimensions for {}: expected {} (magic 0x{:08x}), got {} (magic 0x{:08x})",
               in.path(), what, expected_dims, expected_magic, dims, magic);
  }
  std::vector<std::uint32_t> sizes(dims);
  std::array<std::uint8_t, 4 * 3> raw{};
  const std::size_t got = in.read(raw.data(), 4 * dims);
  if (got < 4 * dims) {
    FAST_THROW(InvalidArgument, "{}: truncated IDX header: expected {} bytes of sizes, got {}", in.path(), 4 * dims,
               got);
  }
  for (unsigned i = 0; i < dims; ++i) sizes[i] = big_endian(raw.data() + 4 * i);
  return sizes;
}

// Reads exactly `bytes` payload bytes and checks that nothing follows. A payload that the file could
// not hold even as gzip at deflate's best ratio is refused before anything is read or allocated.
std::vector<std::uint8_t> read_payload(Reader& in, std::uint64_t bytes, std::string_view shape) {
  if (in.file_bytes() > 0 && bytes / kDeflateMaxRatio > in.file_bytes()) {
    FAST_THROW(InvalidArgument,
               "{}: IDX header declares {} ({} bytes), more than a file of {} bytes can hold (gzip expands at most "
               "{}:1)",
               in.path(), shape, bytes, in.file_bytes(), kDeflateMaxRatio);
  }
  std::vector<std::uint8_t> data;
  data.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(bytes, kMaxReserve)));
  core::populate_pages(data.data(), data.capacity());  // written in full below: no fault per page
  std::uint64_t done = 0;
  while (done < bytes) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(bytes - done, kChunk));
    data.resize(static_cast<std::size_t>(done) + want);
    const std::size_t got = in.read(data.data() + done, want);
    done += got;
    if (got < want) {
      FAST_THROW(InvalidArgument, "{}: truncated IDX payload: expected {} bytes ({}), got {}", in.path(), bytes, shape,
                 done);
    }
  }
  std::array<std::uint8_t, 4096> extra{};
  std::uint64_t trailing = 0;
  for (std::size_t got; (got = in.read(extra.data(), extra.size())) > 0;) trailing += got;
  if (trailing > 0) {
    FAST_THROW(InvalidArgument, "{}: trailing bytes after the IDX payload: expected {} bytes ({}), got {} more",
               in.path(), bytes, shape, trailing);
  }
  return data;
}

}  // namespace

IdxImages read_idx_images(const std::filesystem::path& path, std::uint32_t rows, std::uint32_t cols) {
  Reader in(path);
  const auto sizes = read_header(in, kIdxImagesMagic, "images");
  if (sizes[1] != rows || sizes[2] != cols) {
    FAST_THROW(InvalidArgument, "{}: wrong image size: expected {}x{}, got {}x{}", in.path(), rows, cols, sizes[1],
               sizes[2]);
  }
  IdxImages images{.count = sizes[0], .rows = rows, .cols = cols, .pixels = {}};
  const std::uint64_t bytes = std::uint64_t{images.count} * rows * cols;
  images.pixels = read_payload(in, bytes, fmt::format("{} images of {}x{}", images.count, rows, cols));
  return images;
}

std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& path) {
  Reader in(path);
  const auto sizes = read_header(in, kIdxLabelsMagic, "labels");
  return read_payload(in, sizes[0], fmt::format("{} labels", sizes[0]));
}

}  // namespace fast::torch
