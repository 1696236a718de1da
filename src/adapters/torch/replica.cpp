#include "fast/adapters/torch/replica.hpp"

#include <cstdint>
#include <memory>

#include <torch/types.h>

#include "fast/core/buffer.hpp"
#include "fast/core/error.hpp"

namespace fast::torch {

namespace {
// n float zeros on the CPU in a page run of its own (core::Buffer::long_lived), which the tensor owns:
// the flat parameters and gradients live as long as their worker, so they stay out of the heap
// that steps allocate from (a process of hundreds of simulated workers holds them and little more).
// Resident at once: the parameters are written next, the gradients by the first step.
::torch::Tensor long_lived_zeros(std::int64_t n) {
  if (n == 0) return ::torch::zeros({0}, ::torch::kFloat32);
  auto storage = std::make_shared<core::Buffer>(
      core::Buffer::long_lived(static_cast<std::size_t>(n), core::DType::f32, /*resident_now=*/true));
  void* data = storage->data();
  return ::torch::from_blob(
      data, {n}, [storage](void*) mutable { storage.reset(); }, ::torch::TensorOptions().dtype(::torch::kFloat32));
}
}  // namespace

Replica::Replica(::torch::nn::Module& module) {
  std::vector<NamedTensor> named;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) named.emplace_back(item.key(), item.value());
  repoint(std::move(named), module.name());
}

Replica::Replica(Model& model) { repoint(model.named_parameters(), model.name()); }

Replica::Replica(Model& model, Placement placement) {
  placement_ = placement;
  placement_.staged = placement.staged || !placement.device.is_cpu();
  if (!placement_.device.is_cpu()) model.to(placement_.device);
  repoint(model.named_parameters(), model.name());
}

Replica::Replica(Model& model, Placement placement, core::ConstView initial) {
  placement_ = placement;
  placement_.staged = placement.staged || !placement_.device.is_cpu();
  if (!placement_.device.is_cpu()) model.to(placement_.device);
  repoint(model.named_parameters(), model.name(), &initial);
}

void Replica::repoint(std::vector<NamedTensor> named, const std::string& what, const core::ConstView* initial) {
  FAST_ENFORCE(!named.empty(), "Replica: module '{}' has no parameters", what);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < named.size(); ++i) {
    const auto& [name, p] = named[i];
    FAST_ENFORCE(p.defined(), "Replica: parameter '{}' is undefined", name);
    FAST_ENFORCE(p.scalar_type() == ::torch::kFloat32, "Replica: parameter '{}': expected float32, got {}", name,
                 std::string(c10::toString(p.scalar_type())));
    FAST_ENFORCE(p.device() == placement_.device, "Replica: parameter '{}': expected a tensor on {}, got {}", name,
                 placement_.device.str(), p.device().str());
    for (std::size_t j = 0; j < i; ++j) {
      FAST_ENFORCE(!named[j].second.is_same(p),
                   "Replica: parameters '{}' and '{}' are the same tensor (tied weights "
                   "are not supported: each parameter needs its own slice)",
                   named[j].first, name);
    }
    total += p.numel();
  }
  const bool given = initial != nullptr;
  if (given) {
    FAST_ENFORCE(initial->dtype() == core::DType::f32, "Replica: initial parameters of {}: expected f32 values, got {}",
                 what, core::name_of(initial->dtype()));
    FAST_ENFORCE(initial->numel() == static_cast<std::size_t>(total),
                 "Replica: initial parameters of {}: expected {} values (its parameters' elements), got {}", what,
                 total, initial->numel());
  }
  const auto on_device = ::torch::TensorOptions().dtype(::torch::kFloat32).device(placement_.device);
  const bool cpu = placement_.device.is_cpu();
  device_params_ = cpu ? long_lived_zeros(total) : ::torch::empty({total}, on_device);
  device_grads_ = cpu ? long_lived_zeros(total) : ::torch::zeros({total}, on_device);
  if (placement_.staged) {  // host copies; pinned for a GPU, so that copies need no bounce buffer
    const auto on_host = ::torch::TensorOptions()
                             .dtype(::torch::kFloat32)
                             .device(::torch::kCPU)
                             .pinned_memory(!placement_.device.is_cpu());
    params_ = ::torch::empty({total}, on_host);
    grads_ = ::torch::zeros({total}, on_host);
  } else {
    params_ = device_params_;
    grads_ = device_grads_;
  }
  param_data_ = params_.data_ptr<float>();
  grad_data_ = grads_.data_ptr<float>();
  numel_ = static_cast<std::size_t>(total);

  ::torch::NoGradGuard no_grad;
  std::int64_t offset = 0;
  for (auto& [name, p] : named) {  // p shares the TensorImpl of the module's parameter
    const std::int64_t n = p.numel();
    ::torch::Tensor data = device_params_.narrow(0, offset, n).view(p.sizes());
    if (!given) data.copy_(p);
    p.set_data(data);
    p.mutable_grad() = device_grads_.narrow(0, offset, n).view(p.sizes());
    core::TensorBlock block;
    block.offset = static_cast<std::size_t>(offset);
    block.numel = static_cast<std::size_t>(n);
    for (const std::int64_t d : p.sizes()) block.shape.push_back(static_cast<std::size_t>(d));
    block.rows = p.dim() >= 2 ? static_cast<std::size_t>(p.size(0)) : 1;
    block.name = name;
    layout_.push_back(std::move(block));
    offset += n;
  }
  if (given) {
    load(*initial);
  } else if (placement_.staged) {
    params_.copy_(device_params_);
  }
}

core::MutableView Replica::params() noexcept { return {param_data_, numel_, core::DType::f32}; }
core::MutableView Replica::grads() noexcept { return {grad_data_, numel_, core::DType::f32}; }
std::span<float> Replica::param_span() noexcept { return {param_data_, numel_}; }
std::span<float> Replica::grad_span() noexcept { return {grad_data_, numel_}; }

void Replica::zero_grad() {
  device_grads_.zero_();
  if (placement_.staged) grads_.zero_();
}

void Replica::to_device() {
  if (placement_.staged) device_params_.copy_(params_);
}

void Replica::from_device() {
  if (placement_.staged) grads_.copy_(device_grads_);
}

void Replica::load(core::ConstView src) {
  FAST_ENFORCE(src.dtype() == core::DType::f32, "Replica::load: expected f32 values, got {}",
               core::name_of(src.dtype()));
  FAST_ENFORCE_EQ(src.numel(), numel(), "Replica::load: parameter count");
  core::copy(src, params());
  to_device();
}

}  // namespace fast::torch
