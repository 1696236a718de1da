#include "fast/adapters/torch/device.hpp"

#include <charconv>

#include <torch/cuda.h>

#include "fast/core/error.hpp"

namespace fast::torch {

namespace {

// -1 for "cuda" (no index), K for "cuda:K"; InvalidArgument for anything but cpu, cuda, cuda:K.
int cuda_index(const std::string& spec, const char* option) {
  if (spec == "cuda") return -1;
  const std::string prefix = "cuda:";
  int index = -1;
  if (spec.size() > prefix.size() && spec.compare(0, prefix.size(), prefix) == 0) {
    const char* first = spec.data() + prefix.size();
    const char* last = spec.data() + spec.size();
    const auto [end, ec] = std::from_chars(first, last, index);
    if (ec == std::errc() && end == last && index >= 0) return index;
  }
  FAST_THROW(core::InvalidArgument, "{}: expected cpu, cuda or cuda:K (K a GPU index >= 0), got '{}'", option, spec);
}

}  // namespace

void check_device(const std::string& spec, const char* option) {
  if (spec == "cpu") return;
  const int index = cuda_index(spec, option);
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
  int index = cuda_index(spec, "device");
  if (index < 0) {
    const auto count = static_cast<int>(::torch::cuda::device_count());
    FAST_ENFORCE(count > 0, "device = 'cuda': this process sees no GPU");
    index = rank % count;
  }
  return ::torch::Device(::torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace fast::torch
