#pragma once
// XXH3 (xxHash >= 0.8, header only) compiled once per vector unit of x86-64, and chosen at run time
// (hash.cpp): the hashes are the same on every variant; only their speed differs (in cache on
// AMD EPYC Zen 4: about 37 GB/s with SSE2, 60 with AVX2, 94 with AVX-512).
// Each variant's translation unit (xxh3_sse2/avx2/avx512.cpp) is compiled for its unit alone and
// is called only where the CPU has it. Thread-safety: pure functions.
#include <cstddef>
#include <cstdint>

namespace fast::core::detail {

struct Hash128 {
  std::uint64_t low = 0, high = 0;
};

#define FAST_XXH3_VARIANT(unit)                                      \
  std::uint64_t xxh3_64_##unit(const void* data, std::size_t bytes); \
  Hash128 xxh3_128_##unit(const void* data, std::size_t bytes, std::uint64_t seed);
FAST_XXH3_VARIANT(sse2)
FAST_XXH3_VARIANT(avx2)
FAST_XXH3_VARIANT(avx512)
#undef FAST_XXH3_VARIANT

}  // namespace fast::core::detail
