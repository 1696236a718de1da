#pragma once
// Payload header and little-endian field helpers shared by the codecs (layout in codec.hpp).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "fast/compress/codec.hpp"
#include "fast/core/error.hpp"

namespace fast::compress::wire {

inline constexpr std::uint8_t kMagic[4] = {'F', 'C', 'D', 'C'};
inline constexpr std::uint8_t kVersion = 3;  // 2: sparse index forms (u32, delta, bitmap), powersgd; 3: int8 buckets

template <typename T>
void put(std::uint8_t* p, T v) noexcept {
  static_assert(std::endian::native == std::endian::little, "FAST payloads are little-endian");
  std::memcpy(p, &v, sizeof(T));
}
template <typename T>
T get(const std::uint8_t* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Resizes out to `bytes` u8 and writes the header; returns the first body byte.
std::uint8_t* begin_payload(core::Buffer& out, std::size_t bytes, CodecId id, std::size_t n);

// Checks payload dtype (u8), out dtype (f32), the header (length >= 16, magic, codec id, version,
// reserved bytes, n == out.numel()) and returns the payload bytes. Throws InvalidArgument naming codec.
std::span<const std::uint8_t> check_header(std::string_view codec, CodecId id, core::ConstView payload,
                                           core::MutableView out);

// Throws InvalidArgument unless got == expected ("codec 'x': payload of G bytes, expected E (what)").
void check_length(std::string_view codec, std::size_t got, std::size_t expected, std::string_view what);

// Throws InvalidArgument unless input is f32.
void check_input(std::string_view codec, core::ConstView input);

}  // namespace fast::compress::wire
