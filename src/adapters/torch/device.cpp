#include "fast/adapters/torch/device.hpp"

#include <optional>

#include <torch/cuda.h>

#include "fast/core/error.hpp"
#include "fast/training/device_spec.hpp"

namespace fast::torch {

void check_device(const std::string& spec, const char* option) {
  const std::optional<int> cuda = training::parse_device(spec, option);
  if (!cuda) return;
  const int index = *cuda;
  FAST_ENFORCE(::torch::cuda::is_available(),
               "{} = '{}': the libtorch this FAST was built against has no CUDA support or sees no GPU "
               "(torch::cuda::is_available() is false). Build FAST against a CUDA-enabled libtorch on a machine "
               "with a GPU (docs/gpu.md), or use --device cpu",
               option, spec);
  const auto count = static_cast<int>(::torch::cuda::device_count());
  FAST_ENFORCE(index < count, "{} = '{}': GPU {} does not exist; this process sees {} GPU{} (0 to {})", option, spec,
               index, count, count == 1 ? "" : "s", count - 1);
}

::torch::Device worker_device(const std::string& spec, int rank) {
  if (spec == "cpu") return ::torch::Device(::torch::kCPU);
  int index = training::parse_device(spec, "device").value_or(-1);
  if (index < 0) {
    const auto count = static_cast<int>(::torch::cuda::device_count());
    FAST_ENFORCE(count > 0, "device = 'cuda': this process sees no GPU");
    index = rank % count;
  }
  return ::torch::Device(::torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace fast::torch
