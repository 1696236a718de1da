#include "bulk_tensor.hpp"

#include <sys/mman.h>

#include <cstddef>

#include <c10/util/accumulate.h>

#include "fast/core/long_lived.hpp"

namespace fast::torch {

::torch::Tensor bulk_float_tensor(const std::vector<std::int64_t>& sizes) {
  const auto bytes = static_cast<std::size_t>(c10::multiply_integers(sizes)) * sizeof(float);
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  if (bytes < 4 * kHugePage) return ::torch::empty(sizes, ::torch::kFloat32);
  const std::size_t mapped = bytes + kHugePage;
  void* base = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return ::torch::empty(sizes, ::torch::kFloat32);
  const std::uintptr_t start = (reinterpret_cast<std::uintptr_t>(base) + kHugePage - 1) & ~(kHugePage - 1);
  void* aligned = reinterpret_cast<void*>(start);
  (void)::madvise(aligned, bytes, MADV_HUGEPAGE);
  core::populate_pages(aligned, bytes);
  return ::torch::from_blob(
      aligned, sizes, [base, mapped](void*) { ::munmap(base, mapped); }, ::torch::kFloat32);
}

}  // namespace fast::torch
