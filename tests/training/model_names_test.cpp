// The model names (model_names.hpp): the built-in ones, in order, and what names a model file.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fast/training/model_names.hpp"

namespace fast::training {
namespace {

TEST(ModelNames, AreMlpCnnResnet) { EXPECT_EQ(model_names(), (std::vector<std::string>{"mlp", "cnn", "resnet"})); }

TEST(ModelNames, APathIsAFileSpecAndAPlainNameIsNot) {
  EXPECT_TRUE(is_model_file("model.pt"));
  EXPECT_TRUE(is_model_file("models/net"));
  EXPECT_FALSE(is_model_file("mlp"));
  EXPECT_FALSE(is_model_file(".pt"));
}

}  // namespace
}  // namespace fast::training
