// BufferSync (fast/adapters/torch/buffer_sync.hpp): a TorchScript model's buffers, updated in place
// by its forward pass on each worker's own data, after broadcast, average and local, against the
// values computed here from each worker's data.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <torch/script.h>

#include "common/temp_dir_test.hpp"
#include "fast/adapters/torch/buffer_sync.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/threads/world.hpp"

namespace fast::torch {
namespace {

constexpr int kWorkers = 3;

class BufferSyncTest : public fast::testing::TempDirTest {
 protected:
  // logits = x.flatten(1) @ w.t(); forward adds the batch's column sums to the float buffer `seen`
  // and the batch size to the integer buffer `count` (as BatchNorm updates its statistics).
  std::string save_model() {
    ::torch::jit::Module m("Counting");
    m.register_parameter("w", ::torch::ones({2, 3}), /*is_buffer=*/false);
    m.register_buffer("seen", ::torch::zeros({3}));
    m.register_buffer("count", ::torch::zeros({}, ::torch::kLong));
    m.define(R"(
      def forward(self, x):
          self.seen.add_(x.flatten(1).sum(0))
          self.count.add_(x.size(0))
          return x.flatten(1) @ self.w.t()
    )");
    const std::string file = (dir_ / "counting.pt").string();
    m.save(file);
    return file;
  }
  // Worker r's batch: r + 1 rows of (r + 1) * [1, 2, 3]; `seen` becomes (r + 1)^2 * [1, 2, 3].
  static ::torch::Tensor batch(int rank) {
    return ::torch::tensor({1.0f, 2.0f, 3.0f}).mul(static_cast<float>(rank + 1)).repeat({rank + 1, 1});
  }

  // Each worker's (seen, count) after one forward and a sync under `policy`.
  std::vector<std::pair<std::vector<float>, std::int64_t>> run(BufferPolicy policy) {
    const std::string file = save_model();
    std::vector<std::pair<std::vector<float>, std::int64_t>> out(kWorkers);
    runtime::threads::World world({.size = kWorkers});
    world.run([&](runtime::Context& ctx) {
      Model model = Model::load_script(file);
      BufferSync sync(model, policy);
      (void)model.forward(batch(ctx.rank()));
      collective::Communicator comm(ctx);
      sync.sync(comm);
      std::vector<NamedTensor> buffers = model.named_buffers();
      const ::torch::Tensor seen = buffers.at(0).second.contiguous();
      out[static_cast<std::size_t>(ctx.rank())] = {
          std::vector<float>(seen.data_ptr<float>(), seen.data_ptr<float>() + 3),
          buffers.at(1).second.item<std::int64_t>()};
    });
    return out;
  }
};

TEST_F(BufferSyncTest, BroadcastGivesEveryWorkerRankZerosBuffers) {
  for (const auto& [seen, count] : run(BufferPolicy::broadcast)) {
    EXPECT_EQ(seen, (std::vector<float>{1, 2, 3}));
    EXPECT_EQ(count, 1);
  }
}

TEST_F(BufferSyncTest, AverageGivesTheMeanOfFloatBuffersAndRankZerosIntegers) {
  // mean of (r + 1)^2 over r = 0, 1, 2: (1 + 4 + 9) / 3 = 14 / 3.
  const float m = 14.0f / 3.0f;
  for (const auto& [seen, count] : run(BufferPolicy::average)) {
    EXPECT_FLOAT_EQ(seen[0], m);
    EXPECT_FLOAT_EQ(seen[1], 2 * m);
    EXPECT_FLOAT_EQ(seen[2], 3 * m);
    EXPECT_EQ(count, 1);
  }
}

TEST_F(BufferSyncTest, LocalKeepsEachWorkersOwn) {
  const auto result = run(BufferPolicy::local);
  for (int r = 0; r < kWorkers; ++r) {
    const float k = static_cast<float>((r + 1) * (r + 1));
    EXPECT_EQ(result[static_cast<std::size_t>(r)].first, (std::vector<float>{k, 2 * k, 3 * k}));
    EXPECT_EQ(result[static_cast<std::size_t>(r)].second, r + 1);
  }
}

TEST(BufferPolicy, NamesParseBackAndAutoFollowsTheStrategy) {
  for (std::string_view name : kBufferPolicyNames) EXPECT_EQ(buffer_policy_name(parse_buffer_policy(name)), name);
  EXPECT_EQ(resolve_buffer_policy(BufferPolicy::automatic, false), BufferPolicy::broadcast);
  EXPECT_EQ(resolve_buffer_policy(BufferPolicy::automatic, true), BufferPolicy::local);
  EXPECT_EQ(resolve_buffer_policy(BufferPolicy::average, true), BufferPolicy::average);
  try {
    (void)parse_buffer_policy("rank0");
    ADD_FAILURE() << "no throw";
  } catch (const core::InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()), "buffers: expected one of auto, broadcast, average, local, got 'rank0'");
  }
}

}  // namespace
}  // namespace fast::torch
