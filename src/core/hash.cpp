#include "fast/core/hash.hpp"

#include "xxh3_variants.hpp"

namespace fast::core {

namespace {
// The XXH3 variant of the widest vector unit this CPU has (xxh3_variants.hpp).
struct Xxh3 {
  std::uint64_t (*h64)(const void*, std::size_t);
  detail::Hash128 (*h128)(const void*, std::size_t, std::uint64_t);
};

Xxh3 pick_xxh3() {
#if defined(FAST_XXH3_X86_VARIANTS)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
    return {detail::xxh3_64_avx512, detail::xxh3_128_avx512};
  if (__builtin_cpu_supports("avx2")) return {detail::xxh3_64_avx2, detail::xxh3_128_avx2};
#endif
  return {detail::xxh3_64_sse2, detail::xxh3_128_sse2};
}

const Xxh3& xxh3() {
  static const Xxh3 chosen = pick_xxh3();
  return chosen;
}
}  // namespace

std::uint64_t xxh3_64(std::span<const std::byte> bytes) noexcept { return xxh3().h64(bytes.data(), bytes.size()); }

std::array<std::uint64_t, 2> xxh3_128(std::span<const std::byte> bytes, std::uint64_t seed) noexcept {
  const detail::Hash128 h = xxh3().h128(bytes.data(), bytes.size(), seed);
  return {h.low, h.high};
}

}  // namespace fast::core
