#pragma once
// The names `fast train --model` accepts, apart from the models (models.hpp): this header and its
// source use nothing of libtorch, so the settings table and the Python module need none.

#include <string>
#include <vector>

namespace fast::training {

// The built-in names, in a fixed order: {"mlp", "cnn", "resnet"} (the first names of the model
// registry, model_registry.hpp, which a process that links libtorch may extend).
std::vector<std::string> model_names();

// Whether `spec` names a file rather than a built-in model (contains '/' or ends in ".pt").
bool is_model_file(const std::string& spec);

}  // namespace fast::training
