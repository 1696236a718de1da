#include "bulk_tensor.hpp"

#include <cstddef>
#include <new>

#include <c10/util/accumulate.h>

#include "fast/core/long_lived.hpp"

namespace fast::torch {

::torch::Tensor bulk_float_tensor(const std::vector<std::int64_t>& sizes) {
  const auto bytes = static_cast<std::size_t>(c10::multiply_integers(sizes)) * sizeof(float);
  if (bytes < core::kAlignedRunMinBytes) return ::torch::empty(sizes, ::torch::kFloat32);
  void* data = nullptr;
  try {
    data = core::map_pages(bytes, core::PageUse::written_now);
  } catch (const std::bad_alloc&) {
    return ::torch::empty(sizes, ::torch::kFloat32);
  }
  core::populate_pages(data, bytes);
  return ::torch::from_blob(
      data, sizes, [bytes](void* p) { core::unmap_pages(p, bytes); }, ::torch::kFloat32);
}

}  // namespace fast::torch
