#pragma once
// Payload writers for encoders that compute somewhere else than the host's cores — a GPU, through the
// torch adapter (fast/adapters/torch/device_codec.hpp). Given what a codec's encode computes (the
// 16-bit words of fp16 or bf16, sign's scale and bits, topk's kept indices and their values), each
// writes the very payload that codec's encode writes (formats in codec.hpp), so that the codec's
// decode reads it; the codecs write their payloads through the same code.
//
// Ownership: `out` is resized and overwritten; the spans are read only. Thread-safety: none needed
// (pure functions). Failure: InvalidArgument naming the codec and what disagrees, before `out` is
// touched.

#include <cstddef>
#include <cstdint>
#include <span>

#include "fast/compress/codec.hpp"
#include "fast/core/buffer.hpp"

namespace fast::compress {

// How many elements topk or randk keeps of n at keep ratio r in (0, 1]: max(1, ceil(r n)) clamped
// to n, 0 for n == 0.
std::size_t kept_count(double ratio, std::size_t n);

// fp16 or bf16 (`id`): one 16-bit word per element, n = words.size().
void pack_halves(CodecId id, std::span<const std::uint16_t> words, core::Buffer& out);

// sign: n elements, `scale` (finite, >= 0: mean |x|) and `bits`, ceil(n / 8) bytes, bit i % 8 (LSB
// first) of byte i / 8 set when x_i < 0, padding bits zero.
void pack_sign(std::size_t n, float scale, std::span<const std::uint8_t> bits, core::Buffer& out);

// topk or threshold (`id`): n elements (n < 2^32), `indices` strictly increasing and < n,
// values[j] the element at indices[j]. The index section takes the smallest of its three forms.
void pack_sparse(CodecId id, std::size_t n, std::span<const std::uint32_t> indices, std::span<const float> values,
                 core::Buffer& out);

}  // namespace fast::compress
