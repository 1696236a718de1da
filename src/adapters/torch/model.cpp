// Model: the built-in and TorchScript cases behind one interface (model.hpp).

#include "fast/adapters/torch/model.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <torch/nn/module.h>
#include <torch/script.h>

#include "fast/core/error.hpp"
#include "fast/core/file_status.hpp"

namespace fast::torch {

struct Model::Impl {
  std::string name;
  std::shared_ptr<::torch::nn::Module> module;                     // built-in
  std::function<::torch::Tensor(const ::torch::Tensor&)> forward;  // built-in
  std::optional<::torch::jit::Module> script;                      // from a file
};

namespace {}  // namespace

std::string libtorch_message(std::string_view what) {
  // A TorchScript interpreter error ends with the Python-style exception line.
  const std::size_t at = what.rfind("RuntimeError: ");
  if (at != std::string_view::npos) what.remove_prefix(at + 14);
  // A failed check of libtorch's own starts with its source file and condition.
  constexpr std::string_view kEnforce = "[enforce fail at ";
  if (what.starts_with(kEnforce)) {
    const std::size_t check = what.find("] ");
    const std::size_t message = check == std::string_view::npos ? check : what.find(". ", check);
    if (message != std::string_view::npos) what.remove_prefix(message + 2);
  }
  return std::string(what.substr(0, what.find('\n')));
}

namespace {

void check_script_parameters(const ::torch::jit::Module& module, const std::string& file) {
  std::size_t count = 0;
  std::unordered_map<const c10::TensorImpl*, std::string> names;  // tied weights: one tensor, two names
  for (const auto& p : module.named_parameters(/*recurse=*/true)) {
    ++count;
    FAST_ENFORCE(p.value.scalar_type() == ::torch::kFloat32 && p.value.device().is_cpu(),
                 "model {}: parameter '{}': expected a float32 CPU tensor, got {} on {}", file, p.name,
                 std::string(c10::toString(p.value.scalar_type())), p.value.device().str());
    const auto [seen, first] = names.emplace(p.value.unsafeGetTensorImpl(), p.name);
    FAST_ENFORCE(first,
                 "model {}: parameters '{}' and '{}' are the same tensor (tied weights are not supported: each "
                 "parameter needs its own slice of the model's vector)",
                 file, seen->second, p.name);
  }
  FAST_ENFORCE(count > 0, "model {}: the module has no parameters; expected a trainable module", file);
  // Every parameter is trained, also those saved with requires_grad off (e.g. from a frozen module).
  for (const auto& p : module.named_parameters(/*recurse=*/true)) p.value.set_requires_grad(true);
}

}  // namespace

Model::Model(std::string name, std::shared_ptr<::torch::nn::Module> module,
             std::function<::torch::Tensor(const ::torch::Tensor&)> forward)
    : impl_(std::make_unique<Impl>()) {
  FAST_ENFORCE(module != nullptr && forward, "Model '{}': expected a module and its forward function", name);
  impl_->name = std::move(name);
  impl_->module = std::move(module);
  impl_->forward = std::move(forward);
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Model Model::load_script(const std::string& file) {
  const std::filesystem::file_status status = core::file_status_of(file, "model");
  FAST_ENFORCE(!std::filesystem::is_directory(status),
               "model {}: is a folder; expected a TorchScript file (torch.jit.script(m).save(path))", file);
  if (!std::filesystem::is_regular_file(status))
    FAST_THROW(IoError, "model {}: no such file{}; expected a TorchScript file (torch.jit.script(m).save(path))", file,
               core::relative_to_note(file));
  auto impl = std::make_unique<Impl>();
  impl->name = file;
  try {
    impl->script = ::torch::jit::load(file, ::torch::kCPU);
  } catch (const c10::Error& e) {
    FAST_THROW(InvalidArgument,
               "model {}: not a TorchScript module: expected a file saved with torch.jit.script(model).save(path) "
               "(libtorch: {})",
               file, libtorch_message(e.what()));
  }
  FAST_ENFORCE(impl->script->find_method("forward").has_value(),
               "model {}: the TorchScript module has no forward method", file);
  check_script_parameters(*impl->script, file);
  impl->script->train(true);
  return Model(std::move(impl));
}

Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

::torch::Tensor Model::forward(const ::torch::Tensor& x) {
  if (!impl_->script) return impl_->forward(x);
  const c10::IValue out = impl_->script->forward({x});
  FAST_ENFORCE(out.isTensor(), "model {}: forward returned a {}; expected one tensor of logits", impl_->name,
               out.tagKind());
  return out.toTensor();
}

std::vector<NamedTensor> Model::named_parameters() {
  std::vector<NamedTensor> out;
  if (impl_->script) {
    for (const auto& p : impl_->script->named_parameters(/*recurse=*/true)) out.emplace_back(p.name, p.value);
  } else {
    for (const auto& item : impl_->module->named_parameters(/*recurse=*/true))
      out.emplace_back(item.key(), item.value());
  }
  return out;
}

std::vector<NamedTensor> Model::named_buffers() {
  std::vector<NamedTensor> out;
  if (impl_->script) {
    for (const auto& b : impl_->script->named_buffers(/*recurse=*/true)) out.emplace_back(b.name, b.value);
  } else {
    for (const auto& item : impl_->module->named_buffers(/*recurse=*/true)) out.emplace_back(item.key(), item.value());
  }
  return out;
}

void Model::train(bool on) {
  if (impl_->script)
    impl_->script->train(on);
  else
    impl_->module->train(on);
}

bool Model::is_training() const { return impl_->script ? impl_->script->is_training() : impl_->module->is_training(); }

void Model::to(::torch::Device device) {
  if (impl_->script)
    impl_->script->to(device);
  else
    impl_->module->to(device);
}

::torch::Device Model::device() {
  const std::vector<NamedTensor> named = named_parameters();
  return named.empty() ? ::torch::Device(::torch::kCPU) : named.front().second.device();
}

const std::string& Model::name() const noexcept { return impl_->name; }
bool Model::scripted() const noexcept { return impl_->script.has_value(); }
::torch::nn::Module* Model::module() noexcept { return impl_->module.get(); }

}  // namespace fast::torch
