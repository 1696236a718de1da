#pragma once
// What the CPU this process runs on can do, detected once. Kernels that have a faster variant
// (AVX2, FMA) pick it at run time from here, so one build runs everywhere.

namespace fast::core {

struct CpuFeatures {
  bool avx2 = false;  // x86-64 AVX2
  bool fma = false;   // x86-64 FMA3
};

// Thread-safe; computed on first use.
const CpuFeatures& cpu_features();

}  // namespace fast::core

// The function attribute of kernels compiled for AVX2 (+FMA) on x86-64; empty elsewhere.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FAST_TARGET_AVX2 [[gnu::target("avx2")]]
#define FAST_TARGET_AVX2_FMA [[gnu::target("avx2,fma")]]
#define FAST_HAVE_X86_TARGETS 1
#else
#define FAST_TARGET_AVX2
#define FAST_TARGET_AVX2_FMA
#define FAST_HAVE_X86_TARGETS 0
#endif
