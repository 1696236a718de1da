// XXH3 for CPUs with AVX2 (compiled with its flags; called only where the CPU has it); xxh3_variants.hpp.
#define FAST_XXH3_UNIT avx2
#define XXH_VECTOR XXH_AVX2
#include "xxh3_variant.inc"
