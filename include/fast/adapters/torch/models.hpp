#pragma once
// The model zoo: small networks for 1x28x28 images and 10 classes, chosen by name.
// Layer shapes and parameter counts are listed in docs/models.md.
//
//   mlp  Flatten, Linear(784,256), ReLU, Linear(256,128), ReLU, Linear(128,10)      235,146 parameters
//   cnn  Conv2d(1,32,3), ReLU, MaxPool2d(2), Conv2d(32,64,3), ReLU, MaxPool2d(2),
//        Flatten, Linear(1600,128), ReLU, Linear(128,10)                           225,034 parameters
//
// Inputs are [B,1,28,28] float32; outputs are [B,10] logits.
// Thread-safety: every function may be called from several threads at once.

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/modules/container/sequential.h>

namespace fast::torch {

// The names make_model accepts, in a fixed order: {"mlp", "cnn"}.
std::vector<std::string> model_names();

// A new model of that name, with libtorch's default initialisation drawn from libtorch's global
// generator (use initial_parameters for reproducible values). Unknown name: InvalidArgument
// listing the allowed names.
::torch::nn::Sequential make_model(const std::string& name);

// The flat initial parameter vector of model `name` for `seed`, in Replica layout
// (module.parameters() order, row-major). Every parameter of a Linear or Conv2d layer is drawn
// from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in_features or in_channels*kh*kw: the same
// distribution as libtorch's default (kaiming_uniform with a=sqrt(5) for the weight), but drawn
// from a private generator seeded with `seed`, so the result depends on (name, seed) only: the
// same seed gives the same bytes, also when called from several threads at once.
std::vector<float> initial_parameters(const std::string& name, std::uint64_t seed);

// Number of parameter elements of model `name`.
std::int64_t parameter_count(const std::string& name);

// Floating-point operations to train on one sample (forward + backward), for simulated time:
//   flops = 3 * 2 * MACs,  MACs = sum over Linear layers of in*out
//                               + sum over Conv2d layers of out_h*out_w*out_c*in_c*kh*kw
// (backward costs about twice the forward; biases, activations and pooling are ignored).
// mlp: 1,408,512; cnn: 15,786,240.
double model_flops_per_sample(const std::string& name);

}  // namespace fast::torch
