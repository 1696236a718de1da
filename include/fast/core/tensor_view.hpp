#pragma once
// Non-owning views of a contiguous run of elements. The viewed memory is owned elsewhere
// (a Buffer, a torch tensor, a std::vector: a std::span or a std::vector converts to a view); a
// view must not outlive it. Views are cheap
// values; they are not synchronised: who writes through a MutableView must not race readers.

#include <cstddef>
#include <span>
#include <vector>

#include "fast/core/dtype.hpp"
#include "fast/core/error.hpp"

namespace fast::core {

class ConstView;

class MutableView {
 public:
  MutableView() = default;
  MutableView(void* data, std::size_t numel, DType dtype) : data_(data), numel_(numel), dtype_(dtype) {}
  template <typename T>
  MutableView(std::span<T> s) : data_(s.data()), numel_(s.size()), dtype_(dtype_of_v<T>) {}  // NOLINT
  // Every element of `v` (its memory as it is now: a view does not follow a reallocation).
  template <typename T, typename A>
  MutableView(std::vector<T, A>& v) : MutableView(std::span<T>(v)) {}  // NOLINT

  void* data() const noexcept { return data_; }
  std::size_t numel() const noexcept { return numel_; }
  std::size_t bytes() const noexcept { return numel_ * size_of(dtype_); }
  DType dtype() const noexcept { return dtype_; }

  // Elements [offset, offset + count). Throws InvalidArgument when out of range.
  MutableView slice(std::size_t offset, std::size_t count) const;
  // Typed access; throws InvalidArgument when T does not match dtype().
  template <typename T>
  std::span<T> as() const {
    FAST_ENFORCE(dtype_of_v<T> == dtype_, "view of {} accessed as {}", name_of(dtype_), name_of(dtype_of_v<T>));
    return {static_cast<T*>(data_), numel_};
  }

 private:
  void* data_ = nullptr;
  std::size_t numel_ = 0;
  DType dtype_ = DType::f32;
};

class ConstView {
 public:
  ConstView() = default;
  ConstView(const void* data, std::size_t numel, DType dtype) : data_(data), numel_(numel), dtype_(dtype) {}
  ConstView(const MutableView& v) : data_(v.data()), numel_(v.numel()), dtype_(v.dtype()) {}  // NOLINT
  template <typename T>
  ConstView(std::span<T> s)
      : data_(s.data()), numel_(s.size()), dtype_(dtype_of_v<std::remove_const_t<T>>) {}  // NOLINT
  // Every element of `v` (its memory as it is now: a view does not follow a reallocation).
  template <typename T, typename A>
  ConstView(const std::vector<T, A>& v) : ConstView(std::span<const T>(v)) {}  // NOLINT

  const void* data() const noexcept { return data_; }
  std::size_t numel() const noexcept { return numel_; }
  std::size_t bytes() const noexcept { return numel_ * size_of(dtype_); }
  DType dtype() const noexcept { return dtype_; }

  ConstView slice(std::size_t offset, std::size_t count) const;
  template <typename T>
  std::span<const T> as() const {
    FAST_ENFORCE(dtype_of_v<T> == dtype_, "view of {} accessed as {}", name_of(dtype_), name_of(dtype_of_v<T>));
    return {static_cast<const T*>(data_), numel_};
  }

 private:
  const void* data_ = nullptr;
  std::size_t numel_ = 0;
  DType dtype_ = DType::f32;
};

}  // namespace fast::core
