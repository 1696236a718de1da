// XXH3 for CPUs with AVX-512 (compiled with its flags; called only where the CPU has it); xxh3_variants.hpp.
#define FAST_XXH3_UNIT avx512
#if defined(__GNUC__) && !defined(__clang__)      // GCC 12 warns inside its own avx512fintrin.h, where
#pragma GCC diagnostic ignored "-Wuninitialized"  // _mm512_undefined_* leave a value undefined on purpose
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define XXH_VECTOR XXH_AVX512
#include "xxh3_variant.inc"
