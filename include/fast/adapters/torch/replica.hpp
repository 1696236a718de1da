#pragma once
// Replica: a libtorch module whose parameters and gradients live in two flat float32 buffers.
//
// The constructor allocates ONE contiguous float32 CPU tensor for all parameters and ONE for all
// gradients, copies the current parameter values in (in module.parameters() order), then
// re-points every parameter's data to a slice of the flat parameters and every parameter's
// .grad() to the matching slice of the flat gradients. Autograd then accumulates straight into
// the flat gradient buffer (in place, no per-step copy), and writing into params() changes what
// the module computes. The layout is the concatenation of the parameters in module.parameters()
// order, each flattened row-major.
//
// Ownership: the Replica owns the two flat tensors; the module's parameters share their storage.
// The module must outlive every use of the Replica's views, and the Replica must outlive the
// module's use (parameters keep the flat storage alive through libtorch refcounting, so neither
// dangles; but only the Replica guarantees the layout).
// Rules for the user of the module: never call Module::zero_grad (it may set grads to undefined,
// detaching them from the flat buffer) and never assign new tensors to parameters or grads; use
// Replica::zero_grad() and write through params()/load(). Backward passes without create_graph
// accumulate in place; with create_graph=true libtorch replaces the grad tensor (not supported).
//
// On a device (Placement: a GPU, or `staged` on the CPU): the module's parameters and gradients
// are re-pointed into two flat tensors on the device instead, and params()/grads() are views of
// two host copies (pinned host memory for a GPU), which are what the strategy, the codecs and the
// runtimes read and write. The caller moves them across (docs/gpu.md): to_device() copies the host
// parameters to the device before a forward pass, from_device() the device gradient to the host
// after a backward pass. On the CPU without staging both are no-ops and the views are the
// module's own storage, as above.
// Thread-safety: none; one worker thread owns a Replica and its module.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "fast/adapters/torch/model.hpp"
#include "fast/core/layout.hpp"
#include "fast/core/tensor_view.hpp"

namespace fast::torch {

class Replica {
 public:
  // Where the module computes. `staged` keeps separate device and host buffers even on the CPU
  // (what a GPU worker does, without a GPU: the tests of the device path use it); any device other
  // than the CPU is always staged.
  struct Placement {
    ::torch::Device device = ::torch::Device(::torch::kCPU);
    bool staged = false;
  };

  // Re-points module's parameters as described above. Every parameter must be a defined,
  // float32, CPU tensor, no tensor may be registered twice (tied weights), and the module must
  // have at least one parameter (InvalidArgument otherwise, naming the parameter). Gradients
  // start at zero (grads the module had before are dropped).
  explicit Replica(::torch::nn::Module& module);
  // The same for any Model (built-in or TorchScript), through Model::named_parameters().
  explicit Replica(Model& model);
  // The same on `placement`: the model is moved to placement.device first (Model::to), then
  // re-pointed into flat buffers there; params() and grads() are the host copies (see above).
  Replica(Model& model, Placement placement);
  // The same with the parameters set to `initial` (f32, one value per parameter element in the
  // layout's order; InvalidArgument otherwise, before the flat buffers are allocated, though a
  // model for another device has been moved there): on the CPU the module's own values are never
  // read, so a model built to be loaded (make_model_to_load, whose values are unspecified) costs
  // no pass over them (Model::to copies them to another device first). As the constructor above
  // followed by load(initial).
  Replica(Model& model, Placement placement, core::ConstView initial);

  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;
  Replica(Replica&&) noexcept = default;
  Replica& operator=(Replica&&) noexcept = default;

  // f32 views of the flat parameters / gradients (numel() elements each); valid while *this lives.
  core::MutableView params() noexcept;
  core::MutableView grads() noexcept;
  std::span<float> param_span() noexcept;
  std::span<float> grad_span() noexcept;
  // The flat tensors the module's parameters and gradients share storage with ([numel()] float32,
  // on device()); on the CPU without staging, the same memory as params()/grads().
  const ::torch::Tensor& flat_params() const noexcept { return device_params_; }
  const ::torch::Tensor& flat_grads() const noexcept { return device_grads_; }

  // Where the module computes, and whether the views are host copies of its buffers.
  ::torch::Device device() const noexcept { return placement_.device; }
  bool staged() const noexcept { return placement_.staged; }
  // Staged: the host parameters to the device (before a forward pass, after the host copy changed);
  // the device gradient to the host (after a backward pass). Blocking; no-ops when not staged.
  void to_device();
  void from_device();

  // The flat buffer's tensors, in module.parameters() order, with their shapes and names.
  const core::Layout& layout() const noexcept { return layout_; }
  // Total number of parameter elements.
  std::size_t numel() const noexcept { return numel_; }

  // Sets the flat gradient to zero in place (both copies when staged); grads stay defined and keep
  // their addresses.
  void zero_grad();
  // Copies a flat parameter vector in (and to the device when staged): src must be f32 with
  // numel() elements (InvalidArgument).
  void load(core::ConstView src);

 private:
  // The constructors: checks and re-points `named` (what names the module in messages), its
  // values copied in, or *initial's where that is given.
  void repoint(std::vector<NamedTensor> named, const std::string& what, const core::ConstView* initial = nullptr);

  Placement placement_;
  ::torch::Tensor params_;  // host (the views)
  ::torch::Tensor grads_;
  ::torch::Tensor device_params_;  // what the module uses: params_/grads_ unless staged
  ::torch::Tensor device_grads_;
  float* param_data_ = nullptr;  // params_'s elements
  float* grad_data_ = nullptr;   // grads_'s elements
  std::size_t numel_ = 0;
  core::Layout layout_;
};

}  // namespace fast::torch
