// The frames' and streams' checksums (wire/frame.hpp, src/core/xxh3_variants.hpp): every vector
// variant this CPU runs gives what xxHash's portable scalar code gives, compiled here on its own.
#include <gtest/gtest.h>

#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_SCALAR  // the reference: no vector unit
#include <xxhash.h>

#include <cstdint>
#include <random>
#include <vector>

#include "fast/wire/frame.hpp"
#include "xxh3_variants.hpp"

namespace fast::wire {
namespace {

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (std::byte& b : v) b = static_cast<std::byte>(rng());
  return v;
}

// Lengths on both sides of XXH3's internal boundaries (16, 128, 240 bytes, its 1 KiB stripes' blocks).
const std::size_t kLengths[] = {0, 1, 3, 16, 17, 128, 129, 240, 241, 1023, 1024, 1025, 4096, 65537, 1 << 20};

TEST(Checksum, XXH3OfTheEmptyInputIsThePublishedValue) {
  EXPECT_EQ(XXH3_64bits(nullptr, 0), 0x2D06800538D394C2ull);  // the reference itself, as xxHash documents it
  EXPECT_EQ(checksum({}), 0x38D394C2u);
}

TEST(Checksum, TheDispatchedHashesEqualThePortableReference) {
  for (std::size_t n : kLengths) {
    const std::vector<std::byte> bytes = random_bytes(n, static_cast<unsigned>(n));
    EXPECT_EQ(checksum(bytes), static_cast<std::uint32_t>(XXH3_64bits(bytes.data(), n))) << n << " bytes";
    for (std::uint64_t seed : {0ull, 1ull, 0x123456789abcdefull}) {
      const XXH128_hash_t want = XXH3_128bits_withSeed(bytes.data(), n, seed);
      const std::array<std::uint64_t, 2> got = checksum128(bytes, seed);
      EXPECT_EQ(got[0], want.low64) << n << " bytes, seed " << seed;
      EXPECT_EQ(got[1], want.high64) << n << " bytes, seed " << seed;
    }
  }
}

TEST(Checksum, EveryVariantThisCpuRunsEqualsThePortableReference) {
  struct Variant {
    const char* name;
    bool runs;
    std::uint64_t (*h64)(const void*, std::size_t);
    core::detail::Hash128 (*h128)(const void*, std::size_t, std::uint64_t);
  };
  std::vector<Variant> variants = {{"sse2", true, core::detail::xxh3_64_sse2, core::detail::xxh3_128_sse2}};
#if defined(__x86_64__)
  __builtin_cpu_init();
  variants.push_back(
      {"avx2", __builtin_cpu_supports("avx2") != 0, core::detail::xxh3_64_avx2, core::detail::xxh3_128_avx2});
  variants.push_back({"avx512", __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx512bw") != 0,
                      core::detail::xxh3_64_avx512, core::detail::xxh3_128_avx512});
#endif
  for (const Variant& v : variants) {
    if (!v.runs) {
      std::printf("the %s variant is not checked: this CPU lacks it\n", v.name);
      continue;
    }
    for (std::size_t n : kLengths) {
      const std::vector<std::byte> bytes = random_bytes(n, static_cast<unsigned>(n) + 7);
      EXPECT_EQ(v.h64(bytes.data(), n), XXH3_64bits(bytes.data(), n)) << v.name << ", " << n << " bytes";
      const XXH128_hash_t want = XXH3_128bits_withSeed(bytes.data(), n, 99);
      const core::detail::Hash128 got = v.h128(bytes.data(), n, 99);
      EXPECT_EQ(got.low, want.low64) << v.name << ", " << n << " bytes";
      EXPECT_EQ(got.high, want.high64) << v.name << ", " << n << " bytes";
    }
  }
}

}  // namespace
}  // namespace fast::wire
