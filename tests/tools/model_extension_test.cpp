// A model defined outside the library — here, in this test — registered by name (model_registry.hpp)
// and trained through the path `fast train` takes (apply_config_file, then torch::train), as the
// built-in mlp, cnn and resnet are. docs/models.md, "Adding a model".
//
// softmax-regression is Flatten then one Linear layer: on synthetic samples of shape 1x4x4 with 3
// classes it has 16 x 3 weights and 3 biases, 51 parameters (the summary's count, computed here
// independently of libtorch). The synthetic classes are Gaussian clouds around random centres with
// little noise, so they are linearly separable: after training, the test accuracy is near 1 (chance
// is 1/3) and the loss well below ln 3, the loss of the uniform prediction the training starts near.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <nlohmann/json.hpp>

#include "common/error_message.hpp"
#include "common/test_dir.hpp"
#include "config.hpp"
#include "fast/adapters/torch/model_registry.hpp"
#include "fast/adapters/torch/models.hpp"
#include "fast/adapters/torch/trainer.hpp"
#include "fast/core/error.hpp"

namespace fast {
namespace {

namespace nn = ::torch::nn;

// The sample specs softmax-regression was built for, in call order.
std::mutex seen_mutex;
std::vector<torch::SampleSpec> seen_inputs;

torch::Model make_softmax_regression(const torch::SampleSpec& input) {
  {
    const std::lock_guard lock(seen_mutex);
    seen_inputs.push_back(input);
  }
  std::int64_t features = 1;
  for (const std::int64_t d : input.shape) features *= d;
  nn::Sequential net(nn::Flatten(), nn::Linear(features, input.classes));
  return torch::Model("softmax-regression", net.ptr(),
                      [net](const ::torch::Tensor& x) mutable { return net->forward(x); });
}

void register_softmax_regression() {
  static std::once_flag once;
  std::call_once(once, [] { torch::register_model({.name = "softmax-regression", .make = make_softmax_regression}); });
}

std::filesystem::path write_config(const std::string& name, const std::string& body) {
  const auto path = fast::testing::test_dir("fast_model_extension_test", "files") / name;
  std::ofstream(path) << body;
  return path;
}

TEST(ModelExtension, ARegisteredModelTrainsUnderFastTrainOnASeparableTask) {
  register_softmax_regression();
  const auto config =
      write_config("softmax.toml",
                   "workers = 2\nmodel = \"softmax-regression\"\n"
                   "dataset = \"synthetic:shape=1x4x4,classes=3,train=600,test=300,noise=0.05,seed=4\"\n"
                   "steps = 60\nbatch = 16\noptimizer = \"sgd\"\nlr = 0.5\nseed = 3\n");
  training::TrainOptions options;
  settings::apply_config_file(options, config);
  {
    const std::lock_guard lock(seen_mutex);
    seen_inputs.clear();
  }
  const nlohmann::json summary = torch::train(options);
  EXPECT_EQ(summary["model"], "softmax-regression");
  EXPECT_EQ(summary["parameters"], 16 * 3 + 3);
  EXPECT_GT(summary["final_accuracy"].get<double>(), 0.95) << summary.dump();
  EXPECT_LT(summary["final_loss"].get<double>(), 0.5 * std::log(3.0)) << summary.dump();
  const std::lock_guard lock(seen_mutex);
  ASSERT_FALSE(seen_inputs.empty());
  for (const torch::SampleSpec& input : seen_inputs) {  // sized by the dataset, as the built-ins are
    EXPECT_EQ(input.shape, (std::vector<std::int64_t>{1, 4, 4}));
    EXPECT_EQ(input.classes, 3);
  }
}

TEST(ModelExtension, ItIsListedAndItsCountAndFlopsFollowTheRegistration) {
  register_softmax_regression();
  const std::vector<std::string> names = torch::registered_model_names();
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 3), training::model_names());  // built-ins first
  EXPECT_NE(std::find(names.begin(), names.end(), "softmax-regression"), names.end());
  const torch::SampleSpec input{{2, 5}, 4};
  EXPECT_EQ(torch::parameter_count("softmax-regression", input), 10 * 4 + 4);
  EXPECT_DOUBLE_EQ(torch::model_flops_per_sample("softmax-regression", input), 6.0 * (10 * 4 + 4));  // no flops given
  const std::string unknown =
      testing::error_message<core::InvalidArgument>([] { (void)torch::make_model("softmax", torch::SampleSpec{}); });
  // Listed, and suggested: "softmax" begins its name (core/suggest.hpp).
  EXPECT_NE(unknown.find("unknown name 'softmax' (did you mean 'softmax-regression'?); expected one of mlp, cnn, "
                         "resnet, softmax-regression"),
            std::string::npos)
      << unknown;
}

TEST(ModelExtension, RegistrationsAreChecked) {
  register_softmax_regression();
  const auto refusal = [](torch::ModelRegistration r) {
    return testing::error_message<core::InvalidArgument>([&] { torch::register_model(std::move(r)); });
  };
  EXPECT_NE(refusal({.name = "mlp", .make = make_softmax_regression}).find("model 'mlp' is already registered"),
            std::string::npos);
  EXPECT_NE(refusal({.name = "softmax-regression", .make = make_softmax_regression}).find("already registered"),
            std::string::npos);
  EXPECT_NE(refusal({.name = "my/model.pt", .make = make_softmax_regression}).find("name 'my/model.pt': expected"),
            std::string::npos);
  EXPECT_NE(refusal({.name = "empty"}).find("model 'empty' has no make function"), std::string::npos);
}

}  // namespace
}  // namespace fast
