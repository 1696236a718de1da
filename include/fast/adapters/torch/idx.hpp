#pragma once
// Reader of IDX files, gzip-compressed or not (the MNIST / Fashion-MNIST format), unsigned-byte
// payloads.
//
// IDX layout (all integers big-endian u32): magic = 0x0000TTDD (TT = 0x08: u8 elements,
// DD = number of dimensions), then DD sizes, then the product of the sizes in bytes.
// Files are read with zlib's gzopen/gzread (an uncompressed file is also accepted, zlib reads it
// as is). The header is validated before the payload is read, and the payload is read in chunks,
// so memory grows with the bytes actually present, never with a size the header merely declares.
//
// Errors (each message names the file, what was expected and what was got):
//   IoError          missing or unreadable file, corrupt gzip stream (bad deflate data, CRC
//                    mismatch, compressed data cut short) — zlib's own message is quoted.
//   InvalidArgument  wrong magic (element type or number of dimensions), wrong declared sizes,
//                    payload shorter than declared (truncated) or longer (trailing bytes).
// Thread-safety: the functions share no state.

#include <cstdint>
#include <filesystem>
#include <vector>

namespace fast::torch {

inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;  // u8, 1 dimension
inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;  // u8, 3 dimensions

struct IdxImages {
  std::uint32_t count = 0;
  std::uint32_t rows = 0;
  std::uint32_t cols = 0;
  std::vector<std::uint8_t> pixels;  // count*rows*cols bytes, image-major, row-major
};

// Reads an images file (magic 0x00000803, sizes count x rows x cols); rows and cols must equal
// the expected ones.
IdxImages read_idx_images(const std::filesystem::path& path, std::uint32_t rows = 28, std::uint32_t cols = 28);

// Reads a labels file (magic 0x00000801, one size: count).
std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& path);

}  // namespace fast::torch
