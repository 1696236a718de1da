#include "fast/core/tensor_view.hpp"

namespace fast::core {

namespace {
void check_range(std::size_t offset, std::size_t count, std::size_t numel) {
  FAST_ENFORCE(offset <= numel && count <= numel - offset, "slice [{}, {}) out of range: the view has {} elements",
               offset, offset + count, numel);
}
}  // namespace

MutableView MutableView::slice(std::size_t offset, std::size_t count) const {
  check_range(offset, count, numel_);
  return {static_cast<char*>(data_) + offset * size_of(dtype_), count, dtype_};
}

ConstView ConstView::slice(std::size_t offset, std::size_t count) const {
  check_range(offset, count, numel_);
  return {static_cast<const char*>(data_) + offset * size_of(dtype_), count, dtype_};
}

}  // namespace fast::core
