#pragma once
// Multiply-add rounded the way libtorch rounds it, so that FAST's optimizers follow torch::optim bit
// for bit where the hardware allows.
//
// torch's CPU kernels for add(self, other, alpha) and addcmul run vec::fmadd, a fused multiply-add,
// in their AVX2 and AVX-512 builds, which torch picks on x86-64 CPUs with AVX2 and FMA (and in its
// NEON build on aarch64); its default x86-64 build rounds the product and the sum separately. The
// kernels here take the same choice once per optimizer: madd<true> in functions compiled with
// FAST_OPTIM_FMA_TARGET (fused, vectorised with FMA), madd<false> in baseline functions. fast_optim is
// built with -ffp-contract=off, so the compiler never fuses on its own.

#include <cmath>

#include "fast/core/cpu.hpp"

namespace fast::optim::detail {

// a * b + c, rounded once when kFused, twice otherwise.
template <bool kFused>
[[gnu::always_inline]] inline float madd(float a, float b, float c) {
  if constexpr (kFused) {
    return std::fma(a, b, c);
  } else {
    return a * b + c;
  }
}

// Whether this CPU gets torch's fused kernels: x86-64 with AVX2 and FMA, or aarch64. Computed once.
bool use_fused_multiply_add();

}  // namespace fast::optim::detail

// The target of the fused kernels: AVX2 + FMA code on x86-64, the baseline elsewhere.
#define FAST_OPTIM_FMA_TARGET FAST_TARGET_AVX2_FMA
