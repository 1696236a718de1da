// train(): reproducibility and reporting of the library entry point behind `fast train`.

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "fast/adapters/torch/trainer.hpp"
#include "fast/core/error.hpp"
#include "fast/core/malloc_tuning.hpp"
#include "fast/core/stop_request.hpp"

namespace fast::torch {
namespace {

training::TrainOptions small_run(std::uint64_t seed) {
  training::TrainOptions o;
  o.workers = 3;
  o.model = "mlp";
  o.steps = 25;
  o.batch = 16;
  o.seed = seed;
  o.eval_every = 10;
  o.worker.optimizer = {.name = "momentum", .lr = 0.05};
  return o;
}

TEST(Trainer, SameSeedGivesIdenticalResultsUnderThreadsWithAllreduce) {
  std::vector<training::EpochReport> evals_a, evals_b;
  const auto a = torch::train(small_run(5), {}, [&](const training::EpochReport& e) { evals_a.push_back(e); });
  const auto b = torch::train(small_run(5), {}, [&](const training::EpochReport& e) { evals_b.push_back(e); });
  EXPECT_EQ(a["param_norm"], b["param_norm"]);  // bit-identical, not just close
  EXPECT_EQ(a["final_accuracy"], b["final_accuracy"]);
  EXPECT_EQ(a["final_loss"], b["final_loss"]);
  EXPECT_EQ(a["bytes_sent"], b["bytes_sent"]);
  ASSERT_EQ(evals_a.size(), 3u);  // steps 10 and 20, and the final one at 25
  ASSERT_EQ(evals_b.size(), 3u);
  for (std::size_t i = 0; i < evals_a.size(); ++i) {
    EXPECT_EQ(evals_a[i].step, evals_b[i].step);
    EXPECT_EQ(evals_a[i].accuracy, evals_b[i].accuracy);
  }
  EXPECT_EQ(evals_a[0].step, 10);
  EXPECT_EQ(evals_a[2].step, 25);
  const auto c = torch::train(small_run(6));
  EXPECT_NE(a["param_norm"], c["param_norm"]);
}

TEST(Trainer, SameSeedGivesIdenticalResultsWithEverySynchronousStrategy) {
  for (const char* name : {"local-sgd", "dpsgd", "ps"}) {
    training::TrainOptions o = small_run(9);
    o.worker.strategy.mode = "sync";
    o.worker.strategy.servers = 2;
    o.worker.strategy.name = name;
    o.worker.strategy.period = 4;
    const auto a = torch::train(o);
    const auto b = torch::train(o);
    EXPECT_EQ(a["param_norm"], b["param_norm"]) << name;
    EXPECT_EQ(a["final_accuracy"], b["final_accuracy"]) << name;
    EXPECT_GT(a["final_accuracy"].get<double>(), 0.3) << name;        // 25 steps: well above chance (0.1)
    if (std::string(name) != "ps") {                                  // ps sync keeps the replicas identical
      EXPECT_GT(a["consensus_distance"].get<double>(), 0.0) << name;  // replicas differ between averagings
    }
    EXPECT_LE(a["replica_accuracy_min"].get<double>(), a["replica_accuracy_max"].get<double>()) << name;
  }
}

// A stop (SIGTERM) agreed at a step where a periodic evaluation falls is evaluated once: the final
// evaluation at that step, not the periodic one and then the final one on the same model.
TEST(Trainer, AStopAtAnEvaluationStepEvaluatesOnce) {
  ASSERT_TRUE(core::install_stop_handlers());
  core::request_stop(SIGTERM);  // pending from the start: the workers agree to stop at the first check
  training::TrainOptions o = small_run(3);
  o.steps = 200;  // more than the steps between two stop checks (at most 64)
  o.eval_every = 1;
  std::vector<training::EpochReport> evals;
  const auto s = torch::train(o, {}, [&](const training::EpochReport& e) { evals.push_back(e); });
  core::uninstall_stop_handlers();
  const auto stopped_at = s["steps_per_worker"][0].get<std::int64_t>();
  ASSERT_LT(stopped_at, 200);
  // One evaluation after every step, the last one the final evaluation at the stop.
  ASSERT_EQ(evals.size(), static_cast<std::size_t>(stopped_at));
  for (std::size_t i = 0; i < evals.size(); ++i) EXPECT_EQ(evals[i].step, static_cast<std::int64_t>(i + 1));
  EXPECT_EQ(s["final_accuracy"].get<double>(), evals.back().accuracy);
}

TEST(Trainer, AsynchronousRunsShareTheBatchBudgetAndEvaluateSnapshots) {
  // Worker 2 is 4x slower; the workers claim batches from one budget of steps x workers = 75, so
  // together they take exactly 75 steps whatever the timing, and the snapshot evaluations fall
  // where the claims cross 30 and 60 batches (eval_every = 10 steps x 3 workers), then the final one.
  // ps ssp: the fast workers run out of budget while the slow one may still wait on their clocks
  // (bound 1), so this also checks that finishing workers release it.
  const std::vector<std::pair<std::string, std::string>> runs{{"ps", "async"}, {"ps", "ssp"}, {"easgd", ""},
                                                              {"adpsgd", ""},  {"gosgd", ""}, {"acid", ""}};
  for (const auto& [strategy_name, mode] : runs) {
    const std::string name = strategy_name + " " + mode;
    training::TrainOptions o = small_run(4);
    o.worker.strategy.name = strategy_name;
    o.worker.strategy.mode = mode.empty() ? "async" : mode;
    o.worker.strategy.staleness = 1;
    o.slowdown.factors = {1, 1, 4};
    // Plain SGD: with momentum 0.9, gradients several versions stale make 75 steps erratic (ps ssp
    // ended at 0.19 once under AddressSanitizer's slowdown).
    o.worker.optimizer = {.name = "sgd", .lr = 0.1};
    std::vector<training::EpochReport> evals;
    const auto s = torch::train(o, {}, [&](const training::EpochReport& e) { evals.push_back(e); });
    std::int64_t total = 0;
    for (const auto& steps : s["steps_per_worker"]) total += steps.get<std::int64_t>();
    EXPECT_EQ(total, 75) << name;
    ASSERT_EQ(evals.size(), 3u) << name;
    // Two workers may evaluate at once; reports arrive in the order the evaluations finish.
    std::sort(evals.begin(), evals.end(),
              [](const training::EpochReport& a, const training::EpochReport& b) { return a.step < b.step; });
    EXPECT_EQ(evals[0].step, 10) << name;
    EXPECT_EQ(evals[1].step, 20) << name;
    EXPECT_EQ(evals[2].step, 25) << name;
    EXPECT_GT(s["final_accuracy"].get<double>(), 0.3) << name;  // 75 batches: well above chance (0.1)
    EXPECT_GT(s["bytes_sent"].get<std::uint64_t>(), 0u) << name;
    EXPECT_GT(s["slowdown_seconds"].get<double>(), 0.0) << name;
  }
}

TEST(Trainer, ParamHashIsEqualForIdenticalRunsAndDiffersWithTheSeed) {
  const auto a = torch::train(small_run(7));
  const auto b = torch::train(small_run(7));
  const auto c = torch::train(small_run(8));
  ASSERT_TRUE(a["param_hash"].is_string()) << a.dump();
  EXPECT_EQ(a["param_hash"].get<std::string>().size(), 16u);
  EXPECT_EQ(a["param_hash"], b["param_hash"]);
  EXPECT_NE(a["param_hash"], c["param_hash"]);
}

// The totals of the summary, combined by all-gather at the end of the run, against closed forms:
// a ring all-reduce of n elements over W workers sends every element 2(W-1) times in all (W-1
// times in the reduce-scatter, W-1 in the all-gather); allreduce steps all-reduce the f32
// gradient (n = parameters), each evaluation (steps 10 and 20, and the final one) all-reduces 3
// doubles (the sliced test scores), and nothing else crosses a link.
// The closed forms are the ring's: the run names it (auto would pick recursive doubling for the
// 3 doubles).
TEST(Trainer, EndOfRunTotalsEqualTheirClosedForms) {
  training::TrainOptions o = small_run(2);
  o.worker.communicator.allreduce_algorithm = collective::AllreduceAlgorithm::ring;
  const auto s = torch::train(o);
  const std::uint64_t w = 3, n = s["parameters"].get<std::uint64_t>(), steps = 25, evaluations = 3;
  EXPECT_EQ(s["workers"], 3);
  EXPECT_EQ(s["steps_per_worker"], nlohmann::json::array({25, 25, 25}));
  // 60,000 training images in batches of 16 over 3 workers: 1250 steps per epoch.
  EXPECT_DOUBLE_EQ(s["epochs"].get<double>(), 3.0 * 25 / (3.0 * 1250));
  EXPECT_EQ(s["bytes_sent"].get<std::uint64_t>(), steps * 2 * (w - 1) * n * 4 + evaluations * 2 * (w - 1) * 3 * 8);
  // A ring: worker r sends to r + 1 only; the links add up to bytes_sent.
  std::uint64_t links = 0;
  ASSERT_EQ(s["bytes_per_link"].size(), 3u) << s["bytes_per_link"].dump();
  for (const auto& link : s["bytes_per_link"]) {
    EXPECT_EQ(link["to"].get<int>(), (link["from"].get<int>() + 1) % 3) << link.dump();
    links += link["bytes"].get<std::uint64_t>();
  }
  EXPECT_EQ(links, s["bytes_sent"].get<std::uint64_t>());
  ASSERT_EQ(s["idle_seconds"].size(), 3u);
  double idle = 0;
  for (const auto& i : s["idle_seconds"]) idle += i.get<double>();
  EXPECT_DOUBLE_EQ(s["comm_seconds_mean"].get<double>(), idle / 3);
  EXPECT_EQ(s["skipped_steps"], 0);
  EXPECT_FALSE(s.contains("lost_workers"));
  // Three collective evaluations, each taken off the training clock in full.
  EXPECT_GT(s["eval_seconds"].get<double>(), 0.0);
}

TEST(Trainer, AllreduceReplicasAreIdenticalAndBestIsTheirAccuracy) {
  training::TrainOptions o = small_run(3);
  o.final_model = "best";
  const auto s = torch::train(o);
  EXPECT_EQ(s["consensus_distance"], 0.0);
  EXPECT_EQ(s["replica_accuracy_min"], s["final_accuracy"]);
  EXPECT_EQ(s["replica_accuracy_max"], s["final_accuracy"]);
  EXPECT_EQ(s["final"], "best");
}

TEST(Trainer, ProgressReportsReachTheLastStep) {
  std::vector<training::Progress> reports;
  training::TrainOptions o = small_run(1);
  o.workers = 1;
  torch::train(o, [&](const training::Progress& p) { reports.push_back(p); });
  ASSERT_FALSE(reports.empty());
  EXPECT_TRUE(reports.back().done);
  EXPECT_EQ(reports.back().step, 25);
  EXPECT_EQ(reports.back().total_steps, 25);
  EXPECT_GT(reports.back().samples_per_second, 0.0);
}

TEST(Trainer, SlowdownMakesOnlyTheSlowWorkerWaitAndLeavesResultsUnchanged) {
  training::TrainOptions o = small_run(5);
  const auto plain = torch::train(o);
  o.slowdown.factors = {1.0, 1.0, 2.0};
  const auto slowed = torch::train(o);
  EXPECT_EQ(plain["slowdown_seconds"], 0.0);
  EXPECT_GT(slowed["slowdown_seconds"].get<double>(), 0.0);
  // allreduce is synchronous: a slow worker changes the time, never the parameters.
  EXPECT_EQ(plain["param_norm"], slowed["param_norm"]);
  EXPECT_EQ(plain["final_accuracy"], slowed["final_accuracy"]);
}

TEST(Trainer, BadOptionsFailBeforeAnyWorkerStarts) {
  training::TrainOptions o = small_run(1);
  o.model = "transformer";
  EXPECT_THROW(torch::train(o), core::InvalidArgument);
  o = small_run(1);
  o.slowdown.factors = {1.0, 4.0};  // 3 workers
  EXPECT_THROW(torch::train(o), core::InvalidArgument);
  o = small_run(1);
  o.data_dir = "/nonexistent/fashion";
  EXPECT_THROW(torch::train(o), core::IoError);
  o = small_run(1);
  o.device = "gpu";
  o.data_dir = "/nonexistent/fashion";  // the device is refused first, before the data is looked at
  EXPECT_THROW(torch::train(o), core::InvalidArgument);
}

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// A run that fails hands the tuned heap's free memory back as one that ends does (a caller such as
// Python goes on after the exception): a freed 400 MiB block, kept by the tuned heap, is gone from it
// once train() has thrown. (Each test is a process of its own.)
TEST(Trainer, AFailedRunGivesTheHeapsFreeMemoryBack) {
  const core::MallocTuning tuning = core::tune_malloc();
  if (!tuning.applied) GTEST_SKIP() << tuning.reason;
  constexpr std::size_t kHuge = std::size_t{400} << 20;
  void* huge = std::malloc(kHuge);
  ASSERT_NE(huge, nullptr);
  const std::size_t heap_with_huge = mallinfo2().arena;
  ASSERT_GE(heap_with_huge, kHuge);
  std::free(huge);
  ASSERT_EQ(mallinfo2().arena, heap_with_huge);  // kept by the tuned heap
  training::TrainOptions o = small_run(1);
  o.data_dir = "/nonexistent/fashion";  // refused after the tuning, while the data is read
  EXPECT_THROW(torch::train(o), core::IoError);
  EXPECT_LT(mallinfo2().arena, heap_with_huge - kHuge / 2);
}
#endif

// The device path (docs/gpu.md) on the CPU: each worker's module on its own flat buffers, the
// strategy on host copies refreshed every step, every evaluation through the copies. It must end
// exactly where the plain CPU path does, for the strategies that read the gradient (allreduce, ps)
// and for one that averages models (dpsgd), evaluations included.
TEST(Trainer, TheDevicePathsStagingEndsBitForBitWhereTheCpuPathDoes) {
  for (const char* name : {"allreduce", "ps", "dpsgd"}) {
    training::TrainOptions o = small_run(4);
    o.worker.strategy.name = name;
    o.worker.strategy.mode = "sync";
    const auto plain = torch::train(o);
    o.device_staging = true;
    const auto staged = torch::train(o);
    EXPECT_EQ(plain["param_hash"], staged["param_hash"]) << name;
    EXPECT_EQ(plain["final_accuracy"], staged["final_accuracy"]) << name;
    EXPECT_EQ(plain["final_loss"], staged["final_loss"]) << name;
    EXPECT_EQ(plain["replica_accuracy_min"], staged["replica_accuracy_min"]) << name;
  }
}

// Every `train` record's epoch is the epoch of its last step, (step - 1) / steps_per_epoch: the
// periodic ones and the one written at the end of the run (which said step / steps_per_epoch, one
// more at an epoch's last step). 480 samples, 3 workers of batch 16: 10 steps per epoch; 30 steps,
// a record every 7 and the last at 30, the end of epoch 2.
TEST(Trainer, TrainRecordsNameTheEpochOfTheirLastStep) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("fast_trainer_epochs_" + std::to_string(::getpid()) + ".jsonl");
  training::TrainOptions o = small_run(3);
  o.dataset = "synthetic:train=480,test=96";
  o.steps = 30;
  o.log_every = 7;
  o.eval_every = 0;
  o.metrics = file;
  torch::train(o);
  std::ifstream in(file);
  std::int64_t per_epoch = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> records;  // step, epoch
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json r = nlohmann::json::parse(line);
    if (r["event"] == "start") per_epoch = r["steps_per_epoch"].get<std::int64_t>();
    if (r["event"] == "train") records.emplace_back(r["step"].get<std::int64_t>(), r["epoch"].get<std::int64_t>());
  }
  std::filesystem::remove(file);
  ASSERT_EQ(per_epoch, 10);
  for (std::int64_t step : {7, 14, 21, 28, 30}) {
    const auto n = std::count_if(records.begin(), records.end(), [&](const auto& r) { return r.first == step; });
    EXPECT_EQ(n, 3) << "step " << step << ": one record per worker";
  }
  for (const auto& [step, epoch] : records) EXPECT_EQ(epoch, (step - 1) / 10) << "step " << step;
}

}  // namespace
}  // namespace fast::torch
