#include "fast/training/model_names.hpp"

namespace fast::training {

std::vector<std::string> model_names() { return {"mlp", "cnn", "resnet"}; }

bool is_model_file(const std::string& spec) {
  return spec.find('/') != std::string::npos || (spec.size() > 3 && spec.ends_with(".pt"));
}

}  // namespace fast::training
