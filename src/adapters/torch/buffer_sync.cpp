#include "fast/adapters/torch/buffer_sync.hpp"

#include <span>
#include <string>

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include "fast/core/error.hpp"

namespace fast::torch {

namespace {
std::int64_t total_numel(const std::vector<NamedTensor>& tensors) {
  std::int64_t n = 0;
  for (const auto& [name, t] : tensors) n += t.numel();
  return n;
}

// Copies the tensors, in order, into `flat` (as T) or back from it, in place.
template <class T>
void gather(const std::vector<NamedTensor>& tensors, std::vector<T>& flat) {
  std::size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const ::torch::Tensor host = t.detach().to(::torch::kCPU, c10::CppTypeToScalarType<T>::value).contiguous();
    const auto n = static_cast<std::size_t>(host.numel());
    std::copy_n(host.data_ptr<T>(), n, flat.begin() + static_cast<std::ptrdiff_t>(offset));
    offset += n;
  }
}
template <class T>
void scatter(const std::vector<T>& flat, const std::vector<NamedTensor>& tensors) {
  ::torch::NoGradGuard no_grad;
  std::size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const ::torch::Tensor from =
        ::torch::from_blob(const_cast<T*>(flat.data() + offset), t.sizes(), c10::CppTypeToScalarType<T>::value);
    const_cast<::torch::Tensor&>(t).copy_(from);  // converts to the buffer's dtype and device
    offset += static_cast<std::size_t>(t.numel());
  }
}
}  // namespace

BufferSync::BufferSync(Model& model, BufferPolicy policy) : policy_(policy) {
  FAST_ENFORCE(policy != BufferPolicy::automatic,
               "BufferSync: resolve the policy 'auto' first (resolve_buffer_policy)");
  if (policy == BufferPolicy::local) return;
  for (NamedTensor& b : model.named_buffers()) {
    if (!b.second.defined()) continue;
    if (b.second.is_floating_point())
      floating_.push_back(std::move(b));
    else if (c10::isIntegralType(b.second.scalar_type(), /*includeBool=*/false))
      integral_.push_back(std::move(b));
    else
      FAST_THROW(core::InvalidArgument,
                 "model {}: buffer '{}' is {}; buffers = {} keeps floating-point and integer buffers in step (use "
                 "buffers = local)",
                 model.name(), b.first, std::string(c10::toString(b.second.scalar_type())), buffer_policy_name(policy));
  }
  floats_.resize(static_cast<std::size_t>(total_numel(floating_)));
  ints_.resize(static_cast<std::size_t>(total_numel(integral_)));
}

void BufferSync::sync(collective::Communicator& comm) {
  if (policy_ == BufferPolicy::local || comm.group_size() == 1) return;
  if (!floats_.empty()) {
    gather(floating_, floats_);
    const core::MutableView view{std::span<double>(floats_)};
    if (policy_ == BufferPolicy::average)
      comm.allreduce(view, {.op = collective::ReduceOp::avg});
    else
      comm.broadcast(view, comm.members().front());
    scatter(floats_, floating_);
  }
  if (!ints_.empty()) {
    gather(integral_, ints_);
    comm.broadcast(core::MutableView(std::span<std::int64_t>(ints_)), comm.members().front());
    scatter(ints_, integral_);
  }
}

}  // namespace fast::torch
