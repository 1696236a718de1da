#include "fma.hpp"

namespace fast::optim::detail {

bool use_fused_multiply_add() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool fused = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return fused;
#elif defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

}  // namespace fast::optim::detail
