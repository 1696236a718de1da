#include "copy_past_caches.hpp"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace fast::runtime::zmq {

void copy_past_caches(std::byte* dst, const std::byte* src, std::size_t bytes) {
#if defined(__x86_64__)
  const std::size_t misalign = reinterpret_cast<std::uintptr_t>(dst) % 16;
  const std::size_t lead = misalign == 0 ? 0 : 16 - misalign;
  if (bytes < lead + 64) {
    std::memcpy(dst, src, bytes);
    return;
  }
  std::memcpy(dst, src, lead);
  std::size_t i = lead;
  for (; i + 64 <= bytes; i += 64) {  // four 16-byte stores per 64-byte line
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  std::memcpy(dst + i, src + i, bytes - i);
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace fast::runtime::zmq
