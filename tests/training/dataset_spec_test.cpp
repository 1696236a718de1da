// Dataset specs (dataset_spec.hpp): the kinds, the keys and their defaults, and the mistakes named
// before any data is read.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/error_message.hpp"
#include "fast/core/error.hpp"
#include "fast/training/dataset_spec.hpp"

namespace fast::training {
namespace {

void expect_invalid(const std::function<void()>& f, const std::string& expected) {
  fast::testing::expect_error<InvalidArgument>(f, {expected});
}

TEST(DatasetSpec, ParsesKindsKeysAndDefaults) {
  EXPECT_EQ(dataset_kinds(), (std::vector<std::string>{"fashion-mnist", "npz", "npy", "synthetic"}));
  EXPECT_EQ(parse_dataset_spec("fashion-mnist").kind, "fashion-mnist");
  const DatasetSpec s = parse_dataset_spec("synthetic:classes=4,shape=8");
  EXPECT_EQ(s.kind, "synthetic");
  EXPECT_EQ(s.args.at("classes"), "4");
  EXPECT_EQ(s.args.at("shape"), "8");
  EXPECT_EQ(s.args.at("train"), "60000");  // defaults filled in
  EXPECT_EQ(s.args.at("noise"), "0.25");
}

TEST(DatasetSpec, MistakesAreNamedBeforeAnythingIsRead) {
  expect_invalid([] { parse_dataset_spec("cifar10"); },
                 "dataset spec 'cifar10': unknown name 'cifar10', expected one of: fashion-mnist, npz, npy, synthetic");
  expect_invalid([] { parse_dataset_spec("synthetic:colour=3"); }, "unknown key 'colour' of synthetic");
  expect_invalid([] { parse_dataset_spec("synthetic:classes"); }, "item 'classes' is not KEY=VALUE");
  expect_invalid([] { parse_dataset_spec("synthetic:classes=1"); },
                 "key 'classes' expects an integer in [2, 100000], got '1'");
  expect_invalid([] { parse_dataset_spec("synthetic:shape=3x0x4"); },
                 "key 'shape' expects 1 to 4 dimensions of 1 to 1000000 joined by 'x', at most 1e8 features, got "
                 "'3x0x4'");
  expect_invalid([] { parse_dataset_spec("synthetic:shape=2x2x2x2x2"); }, "key 'shape' expects 1 to 4 dimensions");
  expect_invalid([] { parse_dataset_spec("synthetic:noise=nan"); },
                 "key 'noise' expects a number in [0, 1000000], got 'nan'");
  expect_invalid([] { parse_dataset_spec("synthetic:seed=1,seed=2"); }, "key 'seed' given twice");
  expect_invalid([] { parse_dataset_spec("npz:train=/dev/null"); }, "npz needs test (npz:train=TRAIN,test=TEST)");
  expect_invalid([] { parse_dataset_spec("synthetic:train=100000000,test=100000000,shape=100"); },
                 "expected at most 2e9 values in all");
  EXPECT_THROW(parse_dataset_spec("npz:train=/nonexistent/a.npz,test=/nonexistent/b.npz"), IoError);
}

}  // namespace
}  // namespace fast::training
