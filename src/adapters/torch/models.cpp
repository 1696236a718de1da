#include "fast/adapters/torch/models.hpp"

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "fast/core/error.hpp"

namespace fast::torch {

namespace nn = ::torch::nn;

std::vector<std::string> model_names() { return {"mlp", "cnn"}; }

nn::Sequential make_model(const std::string& name) {
  if (name == "mlp") {
    return nn::Sequential(nn::Flatten(), nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 128), nn::ReLU(),
                          nn::Linear(128, 10));
  }
  if (name == "cnn") {
    // 28x28 -conv3-> 26x26 -pool2-> 13x13 -conv3-> 11x11 -pool2-> 5x5; 64*5*5 = 1600.
    return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3)), nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)),
                          nn::Conv2d(nn::Conv2dOptions(32, 64, 3)), nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)),
                          nn::Flatten(), nn::Linear(1600, 128), nn::ReLU(), nn::Linear(128, 10));
  }
  FAST_THROW(InvalidArgument, "unknown model '{}': expected one of {}", name, fmt::join(model_names(), ", "));
}

std::vector<float> initial_parameters(const std::string& name, std::uint64_t seed) {
  nn::Sequential model = make_model(name);
  ::torch::Generator gen = ::at::make_generator<::at::CPUGeneratorImpl>(seed);
  ::torch::NoGradGuard no_grad;
  for (const auto& layer : model->children()) {
    const auto params = layer->named_parameters(/*recurse=*/false);
    if (params.is_empty()) continue;
    const ::torch::Tensor* weight = params.find("weight");
    FAST_ENFORCE_AS(InvalidUsage, weight != nullptr && weight->dim() >= 2,
                    "initial_parameters: model '{}' has a {} layer without a Linear/Conv weight", name, layer->name());
    // fan_in: in_features (Linear) or in_channels*kh*kw (Conv2d).
    const double fan_in = static_cast<double>(weight->numel() / weight->size(0));
    const double bound = 1.0 / std::sqrt(fan_in);
    for (auto& item : params) item.value().uniform_(-bound, bound, gen);
  }
  std::vector<float> flat;
  flat.reserve(static_cast<std::size_t>(parameter_count(name)));
  for (const ::torch::Tensor& p : model->parameters()) {
    const ::torch::Tensor c = p.contiguous();
    const float* data = c.data_ptr<float>();
    flat.insert(flat.end(), data, data + c.numel());
  }
  return flat;
}

std::int64_t parameter_count(const std::string& name) {
  std::int64_t total = 0;
  for (const ::torch::Tensor& p : make_model(name)->parameters()) total += p.numel();
  return total;
}

double model_flops_per_sample(const std::string& name) {
  nn::Sequential model = make_model(name);
  ::torch::NoGradGuard no_grad;
  ::torch::Tensor x = ::torch::zeros({1, 1, 28, 28});
  double macs = 0;
  for (auto& layer : *model) {
    x = layer.forward(x);
    if (const auto* linear = layer.ptr()->as<nn::Linear>()) {
      macs += static_cast<double>(linear->weight.numel());  // in * out
    } else if (const auto* conv = layer.ptr()->as<nn::Conv2d>()) {
      const ::torch::Tensor& w = conv->weight;               // [out_c, in_c, kh, kw]
      macs += static_cast<double>(x.numel()) * static_cast<double>(w.numel() / w.size(0));
    }
  }
  return 3.0 * 2.0 * macs;
}

}  // namespace fast::torch
