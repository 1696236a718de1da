#pragma once
// Model: one worker's network, whatever made it — a built-in libtorch module (models.hpp) or a
// TorchScript module loaded from a file (saved with torch.jit.script(m).save(path) in Python).
// FAST needs four things of a model: its forward pass, its parameters in a fixed order (Replica
// re-points them into flat buffers), train/eval mode, and a name for messages.
//
// Ownership: a Model owns its module (shared with nobody; moving a Model moves it). Copies are
// not allowed: clone the source (make_model) to get another replica.
// Thread-safety: none; one worker thread uses a Model. Different Models may run in parallel.
// This header includes only libtorch's tensor types; the TorchScript runtime stays in model.cpp.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace fast::torch {

// A parameter with its dotted name ("0.weight", "stage1.0.conv1.bias"). The tensor shares its
// TensorImpl with the module's parameter, so set_data() and mutable_grad() on it reach the module.
using NamedTensor = std::pair<std::string, ::torch::Tensor>;

// The useful line of a libtorch or TorchScript error message (whose full text carries a C++
// backtrace, build paths or the TorchScript traceback): the text after the last "RuntimeError: ",
// else the first line; without the "[enforce fail at FILE:LINE] CONDITION. " a failed check of
// libtorch's starts with.
std::string libtorch_message(std::string_view what);

class Model {
 public:
  // A built-in module (held by shared_ptr, as libtorch's module holders do) with its forward
  // pass. `forward` must call into `module` only. `name` is what messages show ("mlp").
  Model(std::string name, std::shared_ptr<::torch::nn::Module> module,
        std::function<::torch::Tensor(const ::torch::Tensor&)> forward);
  // Loads a TorchScript file. IoError when the file cannot be read; InvalidArgument naming the
  // file when it is not a TorchScript archive, has no `forward` method or no parameters, or has a
  // parameter that is not a float32 CPU tensor. Every parameter is made to require a gradient (all
  // are trained). The module starts in training mode.
  static Model load_script(const std::string& file);

  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  ~Model();

  // Logits [B, classes] of the batch x [B, ...] (autograd records it unless a NoGradGuard is set).
  ::torch::Tensor forward(const ::torch::Tensor& x);
  // Every parameter, recursively, in the module's registration order (built-in: module.parameters()
  // order; TorchScript: Module::named_parameters order). Tensors share storage with the module.
  std::vector<NamedTensor> named_parameters();
  // Every buffer (BatchNorm's running_mean, running_var, num_batches_tracked, ...), recursively, in
  // registration order; the tensors are the module's own (updating them in place reaches it).
  std::vector<NamedTensor> named_buffers();
  void train(bool on);
  bool is_training() const;
  // Moves every parameter and buffer to `device` (module.to(device)); parameters then are new
  // tensors, so a Replica re-points them afterwards (Replica's constructor calls this).
  void to(::torch::Device device);
  // The device of the first parameter (CPU for a model without any).
  ::torch::Device device();
  const std::string& name() const noexcept;
  // True for a model loaded from a file.
  bool scripted() const noexcept;
  // The built-in module, or null for a TorchScript model.
  ::torch::nn::Module* module() noexcept;

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fast::torch
