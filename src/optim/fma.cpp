#include "fma.hpp"

#include "fast/core/cpu.hpp"

namespace fast::optim::detail {

bool use_fused_multiply_add() {
#if FAST_HAVE_X86_TARGETS
  return core::cpu_features().avx2 && core::cpu_features().fma;
#elif defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

}  // namespace fast::optim::detail
