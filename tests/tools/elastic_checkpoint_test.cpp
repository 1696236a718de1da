// The checkpoints of an elastic run that lost a worker (docs/faults.md, "Elastic synchronous
// training"; src/training/checkpoint_store.hpp): those written after the loss hold the survivors'
// files and resume no run, so the newest checkpoint of every worker stays beyond
// --checkpoint-keep, and --resume of the folder skips the survivors' ones and continues from it;
// where only survivors' checkpoints are left, the resume is refused (exit code 2) saying so.
// `fast train --runtime sim`: host 2 of 4 is turned off at 10 simulated seconds (about step 176
// of 468), checkpoints every 50 steps, one kept. Each command bounded in time (run_fast).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/lossy_cluster_file.hpp"
#include "common/run_fast.hpp"
#include "common/test_dir.hpp"

namespace {

namespace fs = std::filesystem;
using fast::testing::slurp;
using nlohmann::json;

#ifdef FAST_TEST_SIM

using fast::testing::lossy_cluster_file;

// The complete checkpoints of `folder`, oldest first: {step, the manifest's workers}.
std::vector<std::pair<std::int64_t, int>> complete_checkpoints(const fs::path& folder) {
  std::vector<std::pair<std::int64_t, int>> found;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (!fs::exists(entry.path() / "manifest.json")) continue;
    const json manifest = json::parse(slurp(entry.path() / "manifest.json"));
    found.emplace_back(manifest["step"].get<std::int64_t>(), manifest["workers"].get<int>());
  }
  std::sort(found.begin(), found.end());
  return found;
}

TEST(ElasticCheckpoints, TheNewestCheckpointOfEveryWorkerStaysAndResumesTheRun) {
  const fs::path dir = fast::testing::test_dir("fast_elastic_checkpoint", "keep");
  const std::string args =
      "train --runtime sim --workers 4 --strategy allreduce --elastic --model mlp --seed 11 --batch 32 --epochs 1 "
      "--eval-every 0 --progress never ";
  const auto lossy = fast::testing::run_fast_in(
      dir, args + "--checkpoint-dir ck --checkpoint-every 50 --checkpoint-keep 1 --summary s.json --cluster " +
               lossy_cluster_file(dir, "lossy.toml", 10).string());
  ASSERT_EQ(lossy.code, 0) << lossy.output;
  const json s = json::parse(slurp(dir / "s.json"));
  ASSERT_EQ(s["lost_workers"], json::array({2})) << s.dump();
  // The final checkpoint (the survivors') and, beyond --checkpoint-keep 1, the last of all 4 workers.
  const auto kept = complete_checkpoints(dir / "ck");
  ASSERT_EQ(kept.size(), 2u) << lossy.output;
  const auto [whole_step, whole_workers] = kept[0];
  EXPECT_EQ(whole_workers, 4);
  EXPECT_EQ(whole_step % 50, 0);
  EXPECT_GT(whole_step, 0);
  EXPECT_EQ(kept[1], std::make_pair(s["steps"].get<std::int64_t>(), 3));
  char name[32];
  std::snprintf(name, sizeof name, "ck/step-%012lld", static_cast<long long>(whole_step));
  EXPECT_NE(lossy.output.find(std::string("'") + name +
                              "', the newest checkpoint of every worker, stays beyond "
                              "checkpoint_keep for --resume"),
            std::string::npos)
      << lossy.output;

  const std::string whole_cluster = lossy_cluster_file(dir, "whole.toml", 0).string();
  const auto resumed =
      fast::testing::run_fast_in(dir, args + "--resume ck --summary r.json --cluster " + whole_cluster);
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resume: skipping 1 checkpoint in 'ck' written by 3 of the run's 4 workers"),
            std::string::npos)
      << resumed.output;
  EXPECT_EQ(json::parse(slurp(dir / "r.json"))["resumed_from_step"], whole_step);

  fs::remove_all(dir / "ck" / fs::path(name).filename());  // only the survivors' checkpoint is left
  const auto refused = fast::testing::run_fast_in(dir, args + "--resume ck --cluster " + whole_cluster);
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_NE(refused.output.find("resume: every complete checkpoint in 'ck' holds the files of 3 of the 4 workers of "
                                "the run that wrote it"),
            std::string::npos)
      << refused.output;
  EXPECT_EQ(refused.output.find("final test accuracy"), std::string::npos) << refused.output;
  if (!HasFailure()) fs::remove_all(dir);
}

#endif  // FAST_TEST_SIM

}  // namespace
