#pragma once
// XXH3 (xxHash >= 0.8), the hash of the wire's checksums and of the parameter hashes: 64 and 128
// bits over a run of bytes, computed with the widest vector unit this CPU has (chosen once; the
// values do not depend on it). Thread-safety: pure functions.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace fast::core {

// XXH3-64 of `bytes`, seed 0 (XXH3_64bits).
std::uint64_t xxh3_64(std::span<const std::byte> bytes) noexcept;
// XXH3-128 of `bytes` with `seed`, {low 64 bits, high 64 bits} (XXH3_128bits_withSeed).
std::array<std::uint64_t, 2> xxh3_128(std::span<const std::byte> bytes, std::uint64_t seed) noexcept;

}  // namespace fast::core
