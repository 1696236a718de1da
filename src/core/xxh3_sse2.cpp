// XXH3 for SSE2 (every x86-64 CPU; the portable code elsewhere); xxh3_variants.hpp.
#define FAST_XXH3_UNIT sse2
#if defined(__x86_64__)
#define XXH_VECTOR XXH_SSE2
#endif
#include "xxh3_variant.inc"
