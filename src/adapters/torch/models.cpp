#include "fast/adapters/torch/models.hpp"

#include <cmath>
#include <new>
#include <numeric>
#include <vector>

#include <sys/mman.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/pooling.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "builtin_models.hpp"
#include "fast/core/error.hpp"
#include "fast/core/long_lived.hpp"
#include "fast/core/suggest.hpp"
#include "resnet.hpp"

namespace fast::torch {

namespace nn = ::torch::nn;

namespace {

std::int64_t features_of(const SampleSpec& input) {
  return std::accumulate(input.shape.begin(), input.shape.end(), std::int64_t{1}, std::multiplies<>());
}

// The input every model needs: at least one feature and at least 2 classes.
void check_input(const std::string& name, const SampleSpec& input) {
  FAST_ENFORCE(!input.shape.empty() && features_of(input) >= 1 && input.classes >= 2,
               "model {}: expected samples of at least one feature and at least 2 classes, got {}", name,
               input.describe());
}

// cnn and resnet: images.
void check_image(const std::string& name, const SampleSpec& input) {
  FAST_ENFORCE(input.shape.size() == 3, "model {}: expected samples of shape CxHxW (images), got {}", name,
               input.describe());
  FAST_ENFORCE(name != "cnn" || (input.shape[1] >= 10 && input.shape[2] >= 10),
               "model cnn: expected images of at least 10x10 (two 3x3 convolutions and two 2x2 poolings), got {}",
               input.describe());
}

// An f32 tensor of `sizes` whose values are unspecified and whose memory nothing has touched: from
// core::kPageRunMinBytes (64 KiB) on, pages of its own (mmap, unmapped with the tensor's storage), so that a model
// built to be loaded holds no resident memory and, once its Replica re-points it, leaves no hole in the malloc heap
// (FAST_MALLOC's tuning keeps every block there; later small blocks landing in the holes of 1,024 mlp workers' dropped
// weights made 0.1-0.2 GB of them resident, an amount that moved from run to run). Smaller ones come from libtorch's
// allocator. Throws std::bad_alloc when mmap fails.
::torch::Tensor untouched_empty(std::vector<std::int64_t> sizes) {
  const auto numel = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{1}, std::multiplies<>());
  const std::size_t bytes = static_cast<std::size_t>(numel) * sizeof(float);
  if (bytes < core::kPageRunMinBytes) return ::torch::empty(sizes);
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return ::torch::from_blob(
      p, sizes, [bytes](void* q) { ::munmap(q, bytes); }, ::torch::TensorOptions().dtype(::torch::kFloat32));
}

// nn::Linear's layer (the same parameters, "weight" [out, in] and "bias" [out], and the same
// forward, F::linear) whose construction neither draws nor writes anything: its parameters are
// uninitialised memory until the caller sets them (make_model_to_load; a worker's Replica takes the
// run's initial parameters without reading these). nn::Linear draws its parameters in its
// constructor, from libtorch's process-wide generator, under that generator's lock: building the
// models of 1,024 simulated mlp workers spent about a second of CPU on draws that the initial
// parameters then replace, one worker at a time; zeros instead cost a gigabyte of first writes.
class UndrawnLinearImpl : public nn::Cloneable<UndrawnLinearImpl> {
 public:
  UndrawnLinearImpl(std::int64_t in_features, std::int64_t out_features) : in_(in_features), out_(out_features) {
    reset();
  }
  void reset() override {
    weight = register_parameter("weight", untouched_empty({out_, in_}));
    bias = register_parameter("bias", untouched_empty({out_}));
  }
  ::torch::Tensor forward(const ::torch::Tensor& x) { return nn::functional::linear(x, weight, bias); }
  ::torch::Tensor weight;
  ::torch::Tensor bias;

 private:
  std::int64_t in_;
  std::int64_t out_;
};
TORCH_MODULE(UndrawnLinear);

// The dense layers of the built-ins: libtorch's (drawn, make_model) or undrawn (make_model_to_load).
template <typename Dense>
nn::Sequential make_mlp_of(const SampleSpec& input) {
  return nn::Sequential(nn::Flatten(), Dense(features_of(input), 256), nn::ReLU(), Dense(256, 128), nn::ReLU(),
                        Dense(128, input.classes));
}

template <typename Dense>
nn::Sequential make_cnn_of(const SampleSpec& input) {
  // 28x28 -conv3-> 26x26 -pool2-> 13x13 -conv3-> 11x11 -pool2-> 5x5; 64*5*5 = 1600.
  const std::int64_t h = ((input.shape[1] - 2) / 2 - 2) / 2;
  const std::int64_t w = ((input.shape[2] - 2) / 2 - 2) / 2;
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(input.shape[0], 32, 3)), nn::ReLU(),
                        nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Conv2d(nn::Conv2dOptions(32, 64, 3)), nn::ReLU(),
                        nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(), Dense(64 * h * w, 128), nn::ReLU(),
                        Dense(128, input.classes));
}

nn::Sequential make_mlp(const SampleSpec& input) { return make_mlp_of<nn::Linear>(input); }
nn::Sequential make_cnn(const SampleSpec& input) { return make_cnn_of<nn::Linear>(input); }

// A built-in module holder (Sequential, ResNet) as a Model.
template <typename Holder>
Model wrap(const std::string& name, Holder net) {
  return Model(name, net.ptr(), [net](const ::torch::Tensor& x) mutable { return net->forward(x); });
}

// Draws every parameter of `module` (recursively, in registration order) as models.hpp states.
void initialise(nn::Module& module, const std::string& name, std::uint64_t seed) {
  ::torch::Generator gen = ::at::make_generator<::at::CPUGeneratorImpl>(seed);
  ::torch::NoGradGuard no_grad;
  for (const auto& layer : module.modules(/*include_self=*/true)) {
    auto params = layer->named_parameters(/*recurse=*/false);
    if (params.is_empty()) continue;
    if (layer->as<nn::GroupNorm>() != nullptr) {
      params["weight"].fill_(1.0);
      params["bias"].fill_(0.0);
      continue;
    }
    const ::torch::Tensor* weight = params.find("weight");
    FAST_ENFORCE_AS(InvalidUsage, weight != nullptr && weight->dim() >= 2,
                    "initial_parameters: model '{}' has a {} layer without a Linear/Conv weight", name, layer->name());
    // fan_in: in_features (Linear) or in_channels*kh*kw (Conv2d).
    const double fan_in = static_cast<double>(weight->numel() / weight->size(0));
    const double bound = 1.0 / std::sqrt(fan_in);
    for (auto& item : params) item.value().uniform_(-bound, bound, gen);
  }
}

std::vector<float> flatten(Model& model) {
  std::vector<float> flat;
  for (const auto& [name, p] : model.named_parameters()) {
    const ::torch::Tensor c = p.detach().contiguous();
    const float* data = c.data_ptr<float>();
    flat.insert(flat.end(), data, data + c.numel());
  }
  return flat;
}

// Multiply-accumulates of a Sequential of Linear/Conv2d/activation/pooling layers on one sample.
double sequential_macs(nn::Sequential& model, const SampleSpec& input) {
  ::torch::NoGradGuard no_grad;
  std::vector<std::int64_t> shape{1};
  shape.insert(shape.end(), input.shape.begin(), input.shape.end());
  ::torch::Tensor x = ::torch::zeros(shape);
  double macs = 0;
  for (auto& layer : *model) {
    x = layer.forward(x);
    if (const auto* linear = layer.ptr()->as<nn::Linear>()) {
      macs += static_cast<double>(linear->weight.numel());  // in * out
    } else if (const auto* conv = layer.ptr()->as<nn::Conv2d>()) {
      const ::torch::Tensor& w = conv->weight;  // [out_c, in_c, kh, kw]
      macs += static_cast<double>(x.numel()) * static_cast<double>(w.numel() / w.size(0));
    }
  }
  return macs;
}

}  // namespace

std::vector<ModelRegistration> builtin_models() {
  const auto sequential_flops = [](nn::Sequential (*make)(const SampleSpec&)) {
    return [make](const SampleSpec& input) {
      nn::Sequential model = make(input);
      return 3.0 * 2.0 * sequential_macs(model, input);
    };
  };
  return {
      {.name = "mlp",
       .make = [](const SampleSpec& input) { return wrap("mlp", make_mlp(input)); },
       .flops_per_sample = sequential_flops(&make_mlp),
       .make_to_load = [](const SampleSpec& input) { return wrap("mlp", make_mlp_of<UndrawnLinear>(input)); }},
      {.name = "cnn",
       .make =
           [](const SampleSpec& input) {
             check_image("cnn", input);
             return wrap("cnn", make_cnn(input));
           },
       .flops_per_sample =
           [sequential_flops](const SampleSpec& input) {
             check_image("cnn", input);
             return sequential_flops(&make_cnn)(input);
           },
       .make_to_load =
           [](const SampleSpec& input) {
             check_image("cnn", input);
             return wrap("cnn", make_cnn_of<UndrawnLinear>(input));
           }},
      {.name = "resnet",
       .make =
           [](const SampleSpec& input) {
             check_image("resnet", input);
             return wrap("resnet", ResNet(input.shape[0], input.classes));
           },
       .flops_per_sample =
           [](const SampleSpec& input) {
             check_image("resnet", input);
             return 3.0 * 2.0 * ResNet(input.shape[0], input.classes)->macs(input.shape[1], input.shape[2]);
           }},
  };
}

namespace {

const ModelRegistration& registered(const std::string& spec) {
  if (const ModelRegistration* m = find_model(spec)) return *m;
  FAST_THROW(InvalidArgument,
             "model: unknown name '{}'{}; expected one of {}, or a TorchScript file (a path with '/' or ending in .pt)",
             spec, core::did_you_mean(spec, registered_model_names()), fmt::join(registered_model_names(), ", "));
}

}  // namespace

void check_model_spec(const std::string& spec) {
  if (find_model(spec) != nullptr) return;
  if (training::is_model_file(spec)) {
    (void)Model::load_script(spec);
    return;
  }
  (void)registered(spec);  // throws, naming the registered models
}

Model make_model(const std::string& spec, const SampleSpec& input) {
  const ModelRegistration* m = find_model(spec);
  if (m == nullptr && training::is_model_file(spec)) return Model::load_script(spec);
  const ModelRegistration& r = registered(spec);
  check_input(spec, input);
  return r.make(input);
}

Model make_model_to_load(const std::string& spec, const SampleSpec& input) {
  const ModelRegistration* m = find_model(spec);
  if (m == nullptr || !m->make_to_load) return make_model(spec, input);
  check_input(spec, input);
  return m->make_to_load(input);
}

void check_model_to_load(const std::string& spec, const SampleSpec& input, Model& made) {
  const ModelRegistration* m = find_model(spec);
  if (m == nullptr || !m->make_to_load) return;
  Model to_load = m->make_to_load(input);
  const std::vector<NamedTensor> want = made.named_parameters();
  const std::vector<NamedTensor> got = to_load.named_parameters();
  FAST_ENFORCE(got.size() == want.size(), "model {}: make_to_load builds {} parameters, make {}", spec, got.size(),
               want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    FAST_ENFORCE(got[i].first == want[i].first && got[i].second.sizes() == want[i].second.sizes(),
                 "model {}: parameter {} of make_to_load is '{}' [{}], of make '{}' [{}]; expected the same name and "
                 "shape in the same order",
                 spec, i, got[i].first, fmt::join(got[i].second.sizes(), ", "), want[i].first,
                 fmt::join(want[i].second.sizes(), ", "));
  }
}

void check_model_fits(Model& model, const SampleSpec& input) {
  std::vector<std::int64_t> shape{2};
  shape.insert(shape.end(), input.shape.begin(), input.shape.end());
  ::torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.train(false);
  ::torch::Tensor out;
  try {
    out = model.forward(::torch::zeros(shape));
  } catch (const std::exception& e) {  // c10::Error, or the TorchScript interpreter's error
    model.train(was_training);
    FAST_THROW(InvalidArgument, "model {}: its forward does not accept a batch of the dataset's samples [2, {}]: {}",
               model.name(), input.describe(), libtorch_message(e.what()));
  }
  model.train(was_training);
  FAST_ENFORCE(
      out.dim() == 2 && out.size(0) == 2 && out.size(1) == input.classes && out.scalar_type() == ::torch::kFloat32,
      "model {}: for a batch of 2 samples of {} expected float32 logits of shape [2, {}], got {} of shape [{}]",
      model.name(), input.describe(), input.classes, std::string(c10::toString(out.scalar_type())),
      fmt::join(out.sizes(), ", "));
}

std::vector<float> initial_parameters(Model& model, std::uint64_t seed) {
  if (::torch::nn::Module* module = model.module()) initialise(*module, model.name(), seed);
  return flatten(model);
}

std::vector<float> initial_parameters(const std::string& spec, const SampleSpec& input, std::uint64_t seed) {
  Model model = make_model(spec, input);
  return initial_parameters(model, seed);
}

std::vector<float> initial_parameters(const std::string& spec, std::uint64_t seed) {
  return initial_parameters(spec, SampleSpec{}, seed);
}

std::int64_t parameter_count(const std::string& spec, const SampleSpec& input) {
  Model model = make_model(spec, input);
  std::int64_t total = 0;
  for (const auto& [name, p] : model.named_parameters()) total += p.numel();
  return total;
}

double model_flops_per_sample(const std::string& spec, const SampleSpec& input) {
  const ModelRegistration* m = find_model(spec);
  if (m == nullptr && training::is_model_file(spec)) return 6.0 * static_cast<double>(parameter_count(spec, input));
  const ModelRegistration& r = registered(spec);
  check_input(spec, input);
  return r.flops_per_sample ? r.flops_per_sample(input) : 6.0 * static_cast<double>(parameter_count(spec, input));
}

}  // namespace fast::torch
