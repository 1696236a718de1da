#pragma once
// NumPy's .npy and .npz files (docs/data.md), read with every field checked before any large
// allocation: the magic and version, the header's dict ('descr', 'fortran_order', 'shape'), the
// element type, and that the data holds exactly prod(shape) x itemsize bytes (no truncation, no
// trailing bytes). An array is allocated only once its size is known to match the bytes present,
// so a hostile header cannot make the reader allocate more than the file (or zip member) holds.
//
// Supported element types: little-endian (or single-byte) signed and unsigned integers of 1, 2,
// 4 and 8 bytes, float32 and float64, C order (fortran_order False, or either order when at most one dimension exceeds
// 1). Errors: InvalidArgument naming the file (and the member of a .npz), what was expected and what was found; IoError
// for a file that cannot be opened or read. Thread-safety: the functions share no state; call them from any thread.
// This header does not include libtorch (tensor_dataset.hpp turns arrays into tensors).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace fast::torch {

enum class NpyType { i8, i16, i32, i64, u8, u16, u32, u64, f32, f64 };

// The descr NumPy writes for the type ("<f4", "|u1", ...) and its size in bytes.
std::string descr_of(NpyType type);
std::size_t itemsize_of(NpyType type);
bool is_integer(NpyType type);

struct NpyArray {
  NpyType type = NpyType::f32;
  std::vector<std::int64_t> shape;  // empty for a 0-d array
  std::vector<std::uint8_t> bytes;  // prod(shape) x itemsize, little-endian, C order
  std::int64_t count() const;       // prod(shape) (1 for a 0-d array)
  // Element i as a double / as an int64 (integer types only; InvalidUsage otherwise).
  double number(std::size_t i) const;
  std::int64_t integer(std::size_t i) const;
};

// Where the bytes of an array come from: a file or a zip member. size() is the whole stream's
// length; read() fills exactly n bytes (IoError or InvalidArgument naming `where()` otherwise).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::uint64_t size() const = 0;
  virtual void read(std::uint8_t* out, std::size_t n) = 0;
  virtual const std::string& where() const = 0;  // "FILE" or "FILE: member NAME"
};

// Reads one array from the start of `source`, which must hold nothing after it.
NpyArray read_npy(ByteSource& source);
// Reads a .npy file.
NpyArray read_npy(const std::filesystem::path& file);
// Reads every member NAME.npy of a .npz file (stored or deflated, as np.savez and
// np.savez_compressed write them) into arrays keyed by NAME. A member that is not .npy, or an
// archive that libzip cannot open, is an InvalidArgument naming the file and the member.
std::map<std::string, NpyArray> read_npz(const std::filesystem::path& file);

// Writes values as a 1-D float32 .npy file (numpy.load reads it), through a temporary file renamed
// into place, so a crash never leaves a partial file under `file`. Parent folders are created.
// IoError naming the file when it cannot be written.
void write_npy(const std::filesystem::path& file, std::span<const float> values);

}  // namespace fast::torch
