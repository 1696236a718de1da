#include "fast/core/cpu.hpp"

namespace fast::core {

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
#if FAST_HAVE_X86_TARGETS
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
#endif
    return f;
  }();
  return features;
}

}  // namespace fast::core
