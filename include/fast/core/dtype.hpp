#pragma once
// Element types of the tensors FAST moves.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fast::core {

enum class DType : std::uint8_t { f32 = 0, f64 = 1, f16 = 2, bf16 = 3, i32 = 4, i64 = 5, u8 = 6 };

// Bytes per element.
std::size_t size_of(DType dtype) noexcept;
// Short lower-case name ("f32", ...), used in errors and on the wire.
std::string_view name_of(DType dtype) noexcept;

// The DType of a C++ element type, for typed views.
template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::f64;
};
template <>
struct dtype_of<std::int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct dtype_of<std::int64_t> {
  static constexpr DType value = DType::i64;
};
template <>
struct dtype_of<std::uint8_t> {
  static constexpr DType value = DType::u8;
};
template <typename T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

}  // namespace fast::core
