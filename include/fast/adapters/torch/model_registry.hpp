#pragma once
// The models `fast train --model NAME` builds by name: the built-in networks (mlp, cnn, resnet;
// models.hpp) and any model a program registers before training, as strategies and codecs are
// registered (docs/models.md, "Adding a model"). A name that is not registered and names a file
// (models.hpp: is_model_file) is a TorchScript file instead.
//
// Thread-safety: register_model and the look-ups may be called from any thread (one mutex); a
// registration is never removed, and what find_model returns stays valid.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fast/adapters/torch/model.hpp"

namespace fast::torch {

// What a model is built for: the shape of one sample (without the batch dimension) and the
// number of classes. Fashion-MNIST: {{1, 28, 28}, 10}.
struct SampleSpec {
  std::vector<std::int64_t> shape{1, 28, 28};
  std::int64_t classes = 10;
  std::string describe() const;  // "1x28x28, 10 classes"
};

struct ModelRegistration {
  // What --model names: lowercase letters, digits, '-' and '_', starting with a letter (so never a
  // file name).
  std::string name;
  // A new model for samples of `input` (at least one feature, at least 2 classes: checked before),
  // whose forward maps [B, input.shape...] float32 to [B, input.classes] logits, with libtorch
  // modules made of Linear and Conv2d layers (and GroupNorm): initial_parameters draws those.
  // InvalidArgument naming the model for an input it cannot take.
  std::function<Model(const SampleSpec& input)> make;
  // Floating-point operations to train on one sample (forward + backward); empty: 6 x the
  // parameter count (exact for Linear layers).
  std::function<double(const SampleSpec& input)> flops_per_sample = {};
  // Optional: make's network for a caller that sets every parameter before it uses the model (each
  // worker's replica loads the run's initial parameters: make_model_to_load), built without
  // drawing its parameters (their values unspecified). Its parameters must have make's names,
  // shapes and order, and its forward must give make's results bit for bit for the same
  // parameters. Empty: make. mlp and cnn have one (their dense layers undrawn: drawing them for
  // every simulated worker, under libtorch's generator lock, was most of a worker's set-up).
  std::function<Model(const SampleSpec& input)> make_to_load = {};
  // Whether training draws from libtorch's process-wide random generator (dropout, random
  // augmentation in forward). Such a model's gradients are computed one after the other under sim
  // (never on its compute threads: the order of the draws would depend on them). The built-ins
  // draw none. TorchScript files are taken to draw.
  bool draws_random = false;
};

// Adds a model. InvalidArgument when the name is malformed or taken (the built-ins' too), or make
// is empty.
void register_model(ModelRegistration registration);

// The registered names: the built-ins first (model_names()), then in registration order.
std::vector<std::string> registered_model_names();

// The registration of `name`; nullptr if none.
const ModelRegistration* find_model(const std::string& name);

}  // namespace fast::torch
