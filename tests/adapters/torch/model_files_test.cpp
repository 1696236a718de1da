// TorchScript models from files (Model::load_script, make_model with a path). The modules are
// written by libtorch's own TorchScript compiler (Module::define) and saved, so the test needs no
// Python; tests/tools/model_data_files_test.py covers files saved by Python's torch.jit.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <torch/script.h>

#include "common/temp_dir_test.hpp"
#include "fast/adapters/torch/models.hpp"
#include "fast/adapters/torch/replica.hpp"
#include "fast/core/error.hpp"

namespace fast::torch {
namespace {

namespace fs = std::filesystem;

class ModelFiles : public fast::testing::TempDirTest {
 protected:
  // A linear classifier of 4 features and 3 classes: logits = x.flatten(1) @ w.t() + b, with
  // w[i][j] = 0.1 * (i + 1) * (j - 1) and b[i] = i; parameters registered in the order w, b.
  std::string save_linear(const std::string& name, ::torch::Dtype dtype = ::torch::kFloat32) {
    ::torch::jit::Module m("Linear");
    ::torch::Tensor w = ::torch::empty({3, 4});
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) w[i][j] = 0.1 * (i + 1) * (j - 1);
    m.register_parameter("w", w.to(dtype), /*is_buffer=*/false);
    m.register_parameter("b", ::torch::arange(3, ::torch::kFloat32).to(dtype), false);
    m.define(R"(
      def forward(self, x):
          return x.flatten(1) @ self.w.t() + self.b
    )");
    const std::string file = (dir_ / name).string();
    m.save(file);
    return file;
  }
};

TEST_F(ModelFiles, ForwardAndGradientsThroughAReplicaMatchTheClosedForm) {
  const std::string file = save_linear("linear.pt");
  Model model = make_model(file);
  EXPECT_TRUE(model.scripted());
  EXPECT_EQ(model.name(), file);
  Replica replica(model);
  ASSERT_EQ(replica.numel(), 15u);
  EXPECT_EQ(replica.layout()[0].name, "w");
  EXPECT_EQ(replica.layout()[1].name, "b");
  // The replica holds the file's values: w row-major, then b.
  EXPECT_FLOAT_EQ(replica.param_span()[0], 0.1f * 1 * -1);
  EXPECT_FLOAT_EQ(replica.param_span()[11], 0.1f * 3 * 2);
  EXPECT_FLOAT_EQ(replica.param_span()[14], 2.0f);

  // x[s][j] = s + j for 2 samples; loss = sum of all logits, so dL/dw[i][j] = sum_s x[s][j] = 1 + 2j
  // and dL/db[i] = 2 (the batch).
  const ::torch::Tensor x = ::torch::tensor({0.f, 1.f, 2.f, 3.f, 1.f, 2.f, 3.f, 4.f}).view({2, 4});
  const ::torch::Tensor out = model.forward(x);
  // logits[s][i] = sum_j x[s][j] * 0.1 (i+1)(j-1) + i.
  for (int s = 0; s < 2; ++s)
    for (int i = 0; i < 3; ++i) {
      double expected = i;
      for (int j = 0; j < 4; ++j) expected += (s + j) * 0.1 * (i + 1) * (j - 1);
      EXPECT_NEAR(out[s][i].item<double>(), expected, 1e-5) << s << "," << i;
    }
  out.sum().backward();
  const auto g = replica.grad_span();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_FLOAT_EQ(g[static_cast<std::size_t>(4 * i + j)], 1.0f + 2.0f * j);
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(g[static_cast<std::size_t>(12 + i)], 2.0f);

  // Writing the flat parameters changes what the module computes: all zero gives zero logits.
  std::fill(replica.param_span().begin(), replica.param_span().end(), 0.0f);
  ::torch::NoGradGuard no_grad;
  EXPECT_TRUE(::torch::equal(model.forward(x), ::torch::zeros({2, 3})));
}

TEST_F(ModelFiles, InitialParametersAreTheFileValuesWhateverTheSeed) {
  const std::string file = save_linear("linear.pt");
  const SampleSpec input{{4}, 3};
  const auto a = initial_parameters(file, input, 1);
  const auto b = initial_parameters(file, input, 99);
  ASSERT_EQ(a.size(), 15u);
  EXPECT_EQ(a, b);
  EXPECT_FLOAT_EQ(a[5], 0.1f * 2 * 0);
  EXPECT_FLOAT_EQ(a[7], 0.1f * 2 * 2);
  EXPECT_EQ(parameter_count(file, input), 15);
  EXPECT_DOUBLE_EQ(model_flops_per_sample(file, input), 6.0 * 15);
}

TEST_F(ModelFiles, FitCheckAcceptsTheRightShapeAndNamesTheFileOtherwise) {
  const std::string file = save_linear("linear.pt");
  Model model = make_model(file);
  EXPECT_NO_THROW(check_model_fits(model, {{4}, 3}));
  EXPECT_NO_THROW(check_model_fits(model, {{2, 2}, 3}));  // flatten(1) makes 4 features of 2x2
  try {
    check_model_fits(model, {{1, 28, 28}, 3});
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file), std::string::npos) << what;
    EXPECT_NE(what.find("does not accept a batch of the dataset's samples [2, 1x28x28, 3 classes]"), std::string::npos)
        << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "libtorch's backtrace leaked into the message: " << what;
  }
  try {
    check_model_fits(model, {{4}, 10});
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("expected float32 logits of shape [2, 10], got Float of shape [2, 3]"), std::string::npos)
        << what;
  }
  EXPECT_TRUE(model.is_training());  // the check runs in eval mode and restores the mode
}

TEST_F(ModelFiles, BadFilesAreRefusedNamingTheFile) {
  const fs::path garbage = dir_ / "garbage.pt";
  std::ofstream(garbage) << "this is not a zip archive";
  try {
    (void)make_model(garbage.string());
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(garbage.string() + ": not a TorchScript module"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_THROW((void)make_model((dir_ / "missing.pt").string()), IoError);
  try {
    (void)make_model(save_linear("double.pt", ::torch::kFloat64));
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 'w': expected a float32 CPU tensor, got Double"), std::string::npos)
        << e.what();
  }
  ::torch::jit::Module tied("Tied");  // one tensor under two names (Python: self.c = self.a)
  const ::torch::Tensor shared = ::torch::ones({3, 4});
  tied.register_parameter("a", shared, /*is_buffer=*/false);
  tied.register_parameter("c", shared, false);
  tied.define("def forward(self, x):\n    return x.flatten(1) @ self.a.t() + x.flatten(1) @ self.c.t()\n");
  const fs::path tied_file = dir_ / "tied.pt";
  tied.save(tied_file.string());
  try {
    (void)make_model(tied_file.string());
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(
        std::string(e.what()).find("model " + tied_file.string() + ": parameters 'a' and 'c' are the same tensor"),
        std::string::npos)
        << e.what();
  }
  ::torch::jit::Module empty("Empty");
  empty.define("def forward(self, x):\n    return x\n");
  empty.save((dir_ / "empty.pt").string());
  EXPECT_THROW((void)make_model((dir_ / "empty.pt").string()), InvalidArgument);
}

}  // namespace
}  // namespace fast::torch
