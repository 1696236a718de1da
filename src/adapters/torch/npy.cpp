// .npy parsing (the format: numpy.lib.format; version 1.0 has a 2-byte header length, 2.0 and
// 3.0 a 4-byte one) and .npz reading with libzip.

#include "fast/adapters/torch/npy.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <string_view>

#include <zip.h>

#include "fast/core/error.hpp"
#include "fast/core/parse.hpp"

namespace fast::torch {

namespace {

constexpr std::array<std::uint8_t, 6> kMagic{0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kMaxHeader = 1 << 20;  // NumPy's own limit is 10,000 bytes; anything near this is hostile
constexpr std::int64_t kMaxDimension = (std::int64_t{1} << 62) - 1;  // no file holds more elements

struct TypeInfo {
  NpyType type;
  const char* code;  // descr without its byte-order character
  std::size_t size;
};
constexpr std::array<TypeInfo, 10> kTypes{{{NpyType::i8, "i1", 1},
                                           {NpyType::i16, "i2", 2},
                                           {NpyType::i32, "i4", 4},
                                           {NpyType::i64, "i8", 8},
                                           {NpyType::u8, "u1", 1},
                                           {NpyType::u16, "u2", 2},
                                           {NpyType::u32, "u4", 4},
                                           {NpyType::u64, "u8", 8},
                                           {NpyType::f32, "f4", 4},
                                           {NpyType::f64, "f8", 8}}};

const TypeInfo& info(NpyType type) {
  for (const TypeInfo& t : kTypes)
    if (t.type == type) return t;
  FAST_THROW(InvalidUsage, "npy: unknown element type {}", static_cast<int>(type));
}

// The value of `key` in the header dict: the text after "'key':" up to the next ',' or '}' at
// the same nesting level (a tuple's commas are inside its parentheses).
std::string_view dict_value(std::string_view header, std::string_view key, const std::string& where) {
  for (const char quote : {'\'', '"'}) {
    const std::string needle = fmt::format("{0}{1}{0}", quote, key);
    std::size_t at = header.find(needle);
    if (at == std::string_view::npos) continue;
    at = header.find(':', at + needle.size());
    FAST_ENFORCE(at != std::string_view::npos, "{}: npy header: key '{}' has no value", where, key);
    std::size_t end = at + 1;
    int depth = 0;
    while (end < header.size() && (depth > 0 || (header[end] != ',' && header[end] != '}'))) {
      if (header[end] == '(') ++depth;
      if (header[end] == ')') --depth;
      ++end;
    }
    std::string_view v = header.substr(at + 1, end - at - 1);
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
    return v;
  }
  FAST_THROW(InvalidArgument, "{}: npy header: expected the key '{}', got the header {}", where, key, header);
}

NpyType parse_descr(std::string_view v, const std::string& where) {
  const std::string_view quoted = v;
  FAST_ENFORCE(v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front(),
               "{}: npy header: expected descr to be a quoted type string such as '<f4', got {}", where, quoted);
  v = v.substr(1, v.size() - 2);
  FAST_ENFORCE(v.size() == 3,
               "{}: unsupported element type {}: expected one of <f4 <f8 |u1 |i1 <i2 <i4 <i8 <u2 <u4 <u8", where,
               quoted);
  const char order = v[0];
  const std::string_view code = v.substr(1);
  for (const TypeInfo& t : kTypes) {
    if (code != t.code) continue;
    FAST_ENFORCE(order == '<' || order == '|' || (order == '=' && std::endian::native == std::endian::little),
                 "{}: element type {} is big-endian; expected little-endian ('<') data (convert with "
                 "array.astype(array.dtype.newbyteorder('<')))",
                 where, quoted);
    return t.type;
  }
  FAST_THROW(InvalidArgument,
             "{}: unsupported element type {}: expected one of <f4 <f8 |u1 |i1 <i2 <i4 <i8 <u2 <u4 <u8", where, quoted);
}

std::vector<std::int64_t> parse_shape(std::string_view v, const std::string& where) {
  const std::string_view text = v;
  FAST_ENFORCE(v.size() >= 2 && v.front() == '(' && v.back() == ')',
               "{}: npy header: expected shape to be a tuple such as (60000, 784), got {}", where, text);
  v = v.substr(1, v.size() - 2);
  std::vector<std::int64_t> shape;
  while (true) {
    while (!v.empty() && (v.front() == ' ' || v.front() == ',')) v.remove_prefix(1);
    if (v.empty()) break;
    std::size_t digits = 0;
    while (digits < v.size() && v[digits] >= '0' && v[digits] <= '9') ++digits;
    FAST_ENFORCE(digits > 0, "{}: npy header: expected non-negative integers in shape, got {}", where, text);
    shape.push_back(core::parse_int<std::int64_t>(
        v.substr(0, digits), fmt::format("{}: npy header: a dimension of shape {}", where, text), 0, kMaxDimension));
    v.remove_prefix(digits);
    while (!v.empty() && (v.front() == 'L' || v.front() == ' ')) v.remove_prefix(1);  // Python 2 longs
    FAST_ENFORCE(v.empty() || v.front() == ',', "{}: npy header: expected non-negative integers in shape, got {}",
                 where, text);
  }
  return shape;
}

// prod(shape) x itemsize, or InvalidArgument when it does not fit in 63 bits.
std::uint64_t data_bytes(const std::vector<std::int64_t>& shape, std::size_t itemsize, const std::string& where) {
  unsigned __int128 total = itemsize;
  for (const std::int64_t d : shape) {
    total *= static_cast<std::uint64_t>(d);
    FAST_ENFORCE(total <= std::numeric_limits<std::int64_t>::max(),
                 "{}: npy header: shape ({}) is too large: "
                 "its data would exceed 2^63 bytes",
                 where, fmt::join(shape, ", "));
  }
  return static_cast<std::uint64_t>(total);
}

class FileSource final : public ByteSource {
 public:
  explicit FileSource(const std::filesystem::path& file) : where_(file.string()), in_(file, std::ios::binary) {
    std::error_code ec;
    FAST_ENFORCE_AS(IoError, std::filesystem::is_regular_file(file, ec) && in_,
                    "{}: cannot open the file: expected a readable .npy file", where_);
    size_ = std::filesystem::file_size(file, ec);
  }
  std::uint64_t size() const override { return size_; }
  void read(std::uint8_t* out, std::size_t n) override {
    in_.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(n));
    FAST_ENFORCE_AS(IoError, static_cast<std::size_t>(in_.gcount()) == n, "{}: read failed after {} bytes", where_,
                    static_cast<std::size_t>(in_.gcount()));
  }
  const std::string& where() const override { return where_; }

 private:
  std::string where_;
  std::ifstream in_;
  std::uint64_t size_ = 0;
};

}  // namespace

std::string descr_of(NpyType type) {
  const TypeInfo& t = info(type);
  return std::string(t.size == 1 ? "|" : "<") + t.code;
}
std::size_t itemsize_of(NpyType type) { return info(type).size; }
bool is_integer(NpyType type) { return type != NpyType::f32 && type != NpyType::f64; }

std::int64_t NpyArray::count() const {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) n *= d;
  return n;
}

double NpyArray::number(std::size_t i) const {
  if (type == NpyType::f32) {
    float v;
    std::memcpy(&v, bytes.data() + 4 * i, 4);
    return v;
  }
  if (type == NpyType::f64) {
    double v;
    std::memcpy(&v, bytes.data() + 8 * i, 8);
    return v;
  }
  if (type == NpyType::u64) {
    std::uint64_t v;
    std::memcpy(&v, bytes.data() + 8 * i, 8);
    return static_cast<double>(v);
  }
  return static_cast<double>(integer(i));
}

std::int64_t NpyArray::integer(std::size_t i) const {
  const std::uint8_t* p = bytes.data() + itemsize_of(type) * i;
  switch (type) {
    case NpyType::i8: return static_cast<std::int8_t>(*p);
    case NpyType::u8: return *p;
    case NpyType::i16: {
      std::int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case NpyType::u16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case NpyType::i32: {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case NpyType::u32: {
      std::uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case NpyType::i64: {
      std::int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case NpyType::u64: {  // values above 2^63 - 1 saturate: no label or count is that large
      std::uint64_t v;
      std::memcpy(&v, p, 8);
      return v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                 ? std::numeric_limits<std::int64_t>::max()
                 : static_cast<std::int64_t>(v);
    }
    default: FAST_THROW(InvalidUsage, "NpyArray::integer: the array holds floating-point values");
  }
}

NpyArray read_npy(ByteSource& source) {
  const std::string& where = source.where();
  const std::uint64_t total = source.size();
  std::array<std::uint8_t, 12> lead{};
  FAST_ENFORCE(total >= 10, "{}: not a .npy array: expected at least 10 bytes, got {}", where, total);
  source.read(lead.data(), 10);
  FAST_ENFORCE(std::equal(kMagic.begin(), kMagic.end(), lead.begin()),
               "{}: not a .npy array: expected the magic \\x93NUMPY at its start", where);
  const int major = lead[6];
  FAST_ENFORCE(major >= 1 && major <= 3, "{}: npy version {}.{}: expected version 1.0, 2.0 or 3.0", where, major,
               lead[7]);
  std::uint64_t header_len = lead[8] | (std::uint64_t{lead[9]} << 8);
  std::uint64_t prefix = 10;
  if (major >= 2) {
    FAST_ENFORCE(total >= 12, "{}: truncated npy header", where);
    source.read(lead.data() + 10, 2);
    header_len |= (std::uint64_t{lead[10]} << 16) | (std::uint64_t{lead[11]} << 24);
    prefix = 12;
  }
  FAST_ENFORCE(header_len <= kMaxHeader && prefix + header_len <= total,
               "{}: npy header of {} bytes: expected at most {} and no more than the {} bytes present", where,
               header_len, kMaxHeader, total - prefix);
  std::string header(header_len, '\0');
  source.read(reinterpret_cast<std::uint8_t*>(header.data()), header_len);
  NpyArray out;
  out.type = parse_descr(dict_value(header, "descr", where), where);
  out.shape = parse_shape(dict_value(header, "shape", where), where);
  const std::string_view order = dict_value(header, "fortran_order", where);
  // Fortran and C order lay out the same bytes when at most one dimension exceeds 1.
  const auto wide = std::count_if(out.shape.begin(), out.shape.end(), [](std::int64_t d) { return d > 1; });
  FAST_ENFORCE(order == "False" || wide <= 1,
               "{}: the array is stored in Fortran order; expected C order (save np.ascontiguousarray(a))", where);
  const std::uint64_t bytes = data_bytes(out.shape, itemsize_of(out.type), where);
  const std::uint64_t present = total - prefix - header_len;
  FAST_ENFORCE(present >= bytes, "{}: truncated: shape ({}) of {} needs {} bytes of data, got {}", where,
               fmt::join(out.shape, ", "), descr_of(out.type), bytes, present);
  FAST_ENFORCE(present == bytes, "{}: {} bytes after the data of shape ({}); expected the file to end there", where,
               present - bytes, fmt::join(out.shape, ", "));
  out.bytes.resize(bytes);
  source.read(out.bytes.data(), bytes);
  return out;
}

NpyArray read_npy(const std::filesystem::path& file) {
  FileSource source(file);
  return read_npy(source);
}

void write_npy(const std::filesystem::path& file, std::span<const float> values) {
  // Version 1.0: magic, version, little-endian header length, then the dict padded with spaces and
  // ended by a newline so that the data starts at a multiple of 64 bytes.
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(values.size()) + ",), }";
  const std::size_t prelude = 10;
  header.append(64 - (prelude + header.size() + 1) % 64, ' ');
  header.push_back('\n');
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
  const std::filesystem::path tmp = file.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    FAST_ENFORCE_AS(core::IoError, out.good(), "{}: cannot open the file for writing", tmp.string());
    const auto length = static_cast<std::uint16_t>(header.size());
    const char magic[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
    out.write(magic, sizeof(magic));
    const char le[2] = {static_cast<char>(length & 0xFF), static_cast<char>(length >> 8)};
    out.write(le, 2);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    static_assert(std::endian::native == std::endian::little, "the .npy data is written as stored: little-endian");
    out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size_bytes()));
    FAST_ENFORCE_AS(core::IoError, out.good(), "{}: write failed", tmp.string());
  }
  std::filesystem::rename(tmp, file);
}

namespace {

class ZipMember final : public ByteSource {
 public:
  ZipMember(zip_t* archive, zip_uint64_t index, std::uint64_t size, std::string where)
      : file_(zip_fopen_index(archive, index, 0)), size_(size), where_(std::move(where)) {
    FAST_ENFORCE(file_ != nullptr, "{}: cannot open the member: {}", where_, zip_strerror(archive));
  }
  ~ZipMember() override { zip_fclose(file_); }
  ZipMember(const ZipMember&) = delete;
  ZipMember& operator=(const ZipMember&) = delete;
  std::uint64_t size() const override { return size_; }
  void read(std::uint8_t* out, std::size_t n) override {
    std::size_t done = 0;
    while (done < n) {
      const zip_int64_t got = zip_fread(file_, out + done, n - done);
      FAST_ENFORCE(got > 0, "{}: the member is corrupt or shorter than its directory says ({} of {} bytes read): {}",
                   where_, done, n, got < 0 ? zip_file_strerror(file_) : "end of data");
      done += static_cast<std::size_t>(got);
    }
  }
  const std::string& where() const override { return where_; }

 private:
  zip_file_t* file_;
  std::uint64_t size_;
  std::string where_;
};

}  // namespace

std::map<std::string, NpyArray> read_npz(const std::filesystem::path& file) {
  std::error_code ec;
  FAST_ENFORCE_AS(IoError, std::filesystem::is_regular_file(file, ec), "{}: no such file: expected a .npz archive",
                  file.string());
  int error = 0;
  zip_t* archive = zip_open(file.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (archive == nullptr) {
    zip_error_t z;
    zip_error_init_with_code(&z, error);
    const std::string why = zip_error_strerror(&z);
    zip_error_fini(&z);
    FAST_THROW(InvalidArgument, "{}: not a .npz archive (libzip: {}); expected a file written by np.savez",
               file.string(), why);
  }
  std::map<std::string, NpyArray> out;
  try {
    const zip_int64_t entries = zip_get_num_entries(archive, 0);
    for (zip_int64_t i = 0; i < entries; ++i) {
      zip_stat_t st;
      zip_stat_init(&st);
      FAST_ENFORCE(zip_stat_index(archive, static_cast<zip_uint64_t>(i), 0, &st) == 0 && (st.valid & ZIP_STAT_NAME) &&
                       (st.valid & ZIP_STAT_SIZE),
                   "{}: member {} has no name or size: {}", file.string(), i, zip_strerror(archive));
      std::string name = st.name;
      const std::string where = fmt::format("{}: member {}", file.string(), name);
      FAST_ENFORCE(name.ends_with(".npy"), "{}: expected only .npy members in a .npz archive", where);
      // Deflate expands at most 1032:1, so a member claiming more than that is lying about its size
      // (its claimed size bounds what read_npy allocates).
      FAST_ENFORCE(!(st.valid & ZIP_STAT_COMP_SIZE) || st.size / 1032 <= st.comp_size + 1,
                   "{}: claims {} bytes from {} compressed bytes, more than deflate can produce", where, st.size,
                   st.comp_size);
      ZipMember member(archive, static_cast<zip_uint64_t>(i), st.size, where);
      name.resize(name.size() - 4);
      out[name] = read_npy(member);
    }
  } catch (...) {
    zip_discard(archive);
    throw;
  }
  zip_discard(archive);
  return out;
}

}  // namespace fast::torch
