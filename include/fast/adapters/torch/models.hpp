#pragma once
// The models `fast train --model` accepts: a built-in network by name, or a TorchScript file.
// Layer shapes and parameter counts are listed in docs/models.md. Built-in networks adapt to the
// dataset: their input layer to the sample shape and their output layer to the class count. For
// Fashion-MNIST (1x28x28, 10 classes):
//
//   mlp     Flatten, Linear(784,256), ReLU, Linear(256,128), ReLU, Linear(128,10)       235,146 parameters
//   cnn     Conv2d(1,32,3), ReLU, MaxPool2d(2), Conv2d(32,64,3), ReLU, MaxPool2d(2),
//           Flatten, Linear(1600,128), ReLU, Linear(128,10)                            225,034 parameters
//   resnet  residual CNN (resnet.hpp): a stem and four stages of basic blocks (32, 64, 128, 256
//           channels) with GroupNorm, global average pooling, Linear(256,10)          1,616,362 parameters
//
// These three are registered in the model registry (model_registry.hpp), where a program adds its
// own; every function below takes any registered name. A model spec that is not registered and
// names a file (it contains '/' or ends in ".pt") is loaded with
// Model::load_script: any TorchScript module whose forward maps [B, sample shape] float32 to
// [B, classes] logits. check_model_fits() says whether it does, before training.
// Thread-safety: every function may be called from several threads at once.

#include <cstdint>
#include <string>
#include <vector>

#include "fast/adapters/torch/model.hpp"
#include "fast/adapters/torch/model_registry.hpp"
#include "fast/training/model_names.hpp"

namespace fast::torch {

// A new model for `spec`: a registered network for `input` with libtorch's default initialisation
// (use initial_parameters for reproducible values), or the TorchScript module of the file (input
// not used; see check_model_fits). Unknown name: InvalidArgument listing the registered names and
// how to name a file. cnn and resnet need a sample shape [C, H, W] with H, W >= 10 (InvalidArgument).
Model make_model(const std::string& spec, const SampleSpec& input = {});

// Checks `spec` before any data is read: a registered name, or a TorchScript file that loads (its
// fit to the data is checked once the data is read: check_model_fits). An unknown name fails as in
// make_model; a file that is missing or does not load, as Model::load_script.
void check_model_spec(const std::string& spec);

// As make_model, for a caller that sets every parameter before it uses the model (a worker's
// replica, which loads the run's initial parameters): a registered model's make_to_load where it
// has one (model_registry.hpp; the values of the parameters are then unspecified), else the same
// as make_model.
Model make_model_to_load(const std::string& spec, const SampleSpec& input = {});
// For a registered model with make_to_load: InvalidArgument naming the model and the first
// difference when make_to_load's parameters differ from those of `made` (a model make built) in
// name, shape or order. Nothing for others.
void check_model_to_load(const std::string& spec, const SampleSpec& input, Model& made);

// Runs the model on a batch of two zero samples of `input` (no gradient, eval mode) and checks the
// output is [2, classes] float32. InvalidArgument naming the model, the input shape, and what
// forward returned or the first line of libtorch's error. Built-in models always fit.
void check_model_fits(Model& model, const SampleSpec& input);

// The flat initial parameter vector of `spec` for `seed`, in Replica layout (named_parameters()
// order, row-major). Built-in: every Linear and Conv2d parameter is drawn from
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in_features or in_channels*kh*kw (libtorch's
// default distribution, drawn from a private generator seeded with `seed`, module by module in
// registration order); GroupNorm weights are 1 and biases 0. The result depends on (spec, input,
// seed) only. A file: the parameters saved in it (seed not used), the same for every worker.
std::vector<float> initial_parameters(const std::string& spec, const SampleSpec& input, std::uint64_t seed);
// The same for a model make_model() returned: a built-in model's parameters are drawn into it (the
// result does not depend on their previous values); a file's are read.
std::vector<float> initial_parameters(Model& model, std::uint64_t seed);
// The same for Fashion-MNIST's samples.
std::vector<float> initial_parameters(const std::string& spec, std::uint64_t seed);

// Number of parameter elements.
std::int64_t parameter_count(const std::string& spec, const SampleSpec& input = {});

// Floating-point operations to train on one sample (forward + backward), for simulated time:
//   flops = 3 * 2 * MACs,  MACs = sum over Linear layers of in*out
//                               + sum over Conv2d layers of out_h*out_w*out_c*(in_c/groups)*kh*kw
// (backward costs about twice the forward; biases, activations, norms and pooling are ignored).
// Fashion-MNIST: mlp 1,408,512; cnn 15,786,240; resnet 571,140,096. Another registered model: its
// registration's flops_per_sample, else 6 x its parameter count. A file: 6 x its parameter
// count (exact for a network of Linear layers, an underestimate for convolutions, whose weights
// are reused at every position; fast train's model_flops setting overrides it).
double model_flops_per_sample(const std::string& spec, const SampleSpec& input = {});

}  // namespace fast::torch
