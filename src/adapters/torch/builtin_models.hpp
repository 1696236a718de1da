#pragma once
// The built-in models' registrations (models.cpp), in model_names() order, which the model
// registry (model_registry.cpp) starts with.

#include <vector>

#include "fast/adapters/torch/model_registry.hpp"

namespace fast::torch {

std::vector<ModelRegistration> builtin_models();

}  // namespace fast::torch
