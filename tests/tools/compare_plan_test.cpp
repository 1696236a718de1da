// `fast compare`'s plan (compare_plan.hpp), without libtorch: sweep files expanded in file order,
// config files and flags applied to every run, and every bad input named (file, line, key, flag,
// run) before anything runs.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "common/error_message.hpp"
#include "common/test_dir.hpp"
#include "compare_plan.hpp"
#include "config.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/launcher.hpp"

namespace fast::cli {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() { return fast::testing::test_dir("fast_compare_plan_test", "files"); }

fs::path write_toml(const std::string& name, const std::string& body) {
  const fs::path path = temp_dir() / name;
  std::ofstream(path) << body;
  return path;
}

std::string error_of(const std::function<void()>& fn) { return fast::testing::error_message<core::Error>(fn); }

TEST(CompareSweep, CartesianProductInFileOrderWithBaseTable) {
  const fs::path file = write_toml("sweep1.toml",
                                   "[base]\nmodel = \"cnn\"\nsteps = 7\n"
                                   "[sweep]\nworkers = [4, 8]\nstrategy = [\"allreduce\", \"adpsgd\", \"ps\"]\n");
  const auto runs = plan_runs({file}, {});
  ASSERT_EQ(runs.size(), 6u);
  // workers is listed first, so it is the outer loop even though 'strategy' sorts before it.
  const std::vector<std::pair<int, std::string>> expected{{4, "allreduce"}, {4, "adpsgd"}, {4, "ps"},
                                                          {8, "allreduce"}, {8, "adpsgd"}, {8, "ps"}};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].options.workers, expected[i].first) << i;
    EXPECT_EQ(runs[i].options.worker.strategy.name, expected[i].second) << i;
    EXPECT_EQ(runs[i].options.model, "cnn");
    EXPECT_EQ(runs[i].options.steps, 7);
    EXPECT_EQ(runs[i].source, file);
  }
  EXPECT_EQ(runs[0].label, "workers=4, strategy=allreduce");
  EXPECT_EQ(runs[5].label, "workers=8, strategy=ps");
  EXPECT_EQ(runs[0].varied, (std::vector<std::string>{"workers", "strategy"}));
}

TEST(CompareSweep, RunListCrossedWithSweepAndBaseFileRelativeToSweepFile) {
  write_toml("base2.toml", "workers = 3\nbatch = 16\nlr = 0.5\n");
  const fs::path file = write_toml("sweep2.toml",
                                   "base = \"base2.toml\"\n"
                                   "[sweep]\nseed = [1, 2]\n"
                                   "[[run]]\nname = \"ps async\"\nstrategy = \"ps\"\nmode = \"async\"\n"
                                   "[[run]]\nstrategy = \"local-sgd\"\nperiod = 4\n");
  const auto runs = plan_runs({file}, {});
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].label, "ps async, seed=1");
  EXPECT_EQ(runs[1].label, "ps async, seed=2");
  EXPECT_EQ(runs[2].label, "period=4, strategy=local-sgd, seed=1");
  EXPECT_EQ(runs[0].options.worker.strategy.mode, "async");
  EXPECT_EQ(runs[1].options.seed, 2u);
  EXPECT_EQ(runs[3].options.worker.strategy.period, 4);
  for (const auto& r : runs) {
    EXPECT_EQ(r.options.workers, 3);
    EXPECT_EQ(r.options.batch, 16);
    EXPECT_DOUBLE_EQ(r.options.worker.optimizer.lr, 0.5);
  }
}

TEST(CompareSweep, ConfigFilesGiveOneRunEachAndFlagsApplyToAll) {
  const fs::path a = write_toml("plain-a.toml", "strategy = \"dpsgd\"\nworkers = 4\n");
  const fs::path s = write_toml("sweep3.toml", "[sweep]\nstrategy = [\"allreduce\", \"gosgd\"]\n");
  const auto runs = plan_runs({a, s}, {{"batch", "8", "--batch"}, {"steps", "20", "--steps"}});
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].label, "plain-a");
  EXPECT_EQ(runs[0].options.worker.strategy.name, "dpsgd");
  EXPECT_EQ(runs[2].options.worker.strategy.name, "gosgd");
  for (const auto& r : runs) {
    EXPECT_EQ(r.options.batch, 8);
    EXPECT_EQ(r.options.steps, 20);
  }
}

// Every config and sweep file shipped in examples/ plans (its keys and values valid, its base found,
// its runs' labels distinct): what `fast compare` checks before it runs anything. A file of a
// runtime this build lacks (sim in a minimal build) is left out.
TEST(CompareSweep, EveryShippedExampleFilePlans) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(fs::path(FAST_TEST_SOURCE_DIR) / "examples"))
    if (entry.path().extension() == ".toml") files.push_back(entry.path());
  ASSERT_GE(files.size(), 10u);
  const std::vector<std::string> built = runtime::runtime_names();
  struct Chdir {  // as their comments say: from the repository root; back afterwards, whatever happens
    fs::path before = fs::current_path();
    Chdir() { fs::current_path(FAST_TEST_SOURCE_DIR); }
    ~Chdir() { fs::current_path(before); }
  } root;
  int planned = 0;
  for (const fs::path& file : files) {
    std::ifstream in(file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("runtime = \"sim\"") != std::string::npos &&
        std::find(built.begin(), built.end(), "sim") == built.end())
      continue;
    try {
      EXPECT_FALSE(plan_runs({file}, {}).empty()) << file;
      ++planned;
    } catch (const core::Error& e) {
      ADD_FAILURE() << file << ": " << e.what();
    }
  }
  EXPECT_GE(planned, 3) << "the examples of the threads runtime at least";
}

TEST(CompareSweep, BadInputNamesFileLineAndKey) {
  std::string e = error_of([] {
    plan_runs({write_toml("bad1.toml", "[sweep]\nworkers = [2]\nstrategy = [\"allreduce\", \"telepathy\"]\n")}, {});
  });
  EXPECT_NE(e.find("bad1.toml' line 3"), std::string::npos) << e;
  EXPECT_NE(e.find("key 'strategy'"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown value 'telepathy'"), std::string::npos) << e;

  e = error_of([] { plan_runs({write_toml("bad2.toml", "[sweep]\nworkers = [4, \"eight\"]\n")}, {}); });
  EXPECT_NE(e.find("bad2.toml' line 2"), std::string::npos) << e;
  EXPECT_NE(e.find("item 2"), std::string::npos) << e;
  EXPECT_NE(e.find("key 'workers' expects integer, got a string"), std::string::npos) << e;

  e = error_of([] { plan_runs({write_toml("bad3.toml", "[sweep]\nworkers = 4\n")}, {}); });
  EXPECT_NE(e.find("[sweep] key 'workers' expects a non-empty list"), std::string::npos) << e;

  e = error_of([] { plan_runs({write_toml("bad4.toml", "workers = 4\n[sweep]\nseed = [1]\n")}, {}); });
  EXPECT_NE(e.find("bad4.toml' line 1: unknown key 'workers'"), std::string::npos) << e;

  e = error_of([] { plan_runs({write_toml("bad5.toml", "[sweep]\nseed = [1]\n[[run]]\nseed = 3\n")}, {}); });
  EXPECT_NE(e.find("[[run]] key 'seed' is also swept"), std::string::npos) << e;

  e = error_of([] { plan_runs({write_toml("bad6.toml", "[[run]]\nwokers = 3\n")}, {}); });
  EXPECT_NE(e.find("bad6.toml' line 2: unknown key 'wokers'"), std::string::npos) << e;

  e = error_of([] { plan_runs({write_toml("bad7.toml", "base = \"no-such-base.toml\"\n")}, {}); });
  EXPECT_NE(e.find("no-such-base.toml' does not exist"), std::string::npos) << e;

  // Two rows of one label: two [[run]]s of one name, and one config file given twice.
  e = error_of([] {
    plan_runs({write_toml("bad9.toml", "[[run]]\nname = \"a\"\nseed = 1\n[[run]]\nname = \"a\"\nseed = 2\n")}, {});
  });
  EXPECT_NE(e.find("runs 1 ('" + (temp_dir() / "bad9.toml").string() + "') and 2 ('" +
                   (temp_dir() / "bad9.toml").string() + "') are both labelled 'a'"),
            std::string::npos)
      << e;
  const fs::path plain = write_toml("plain-b.toml", "workers = 2\n");
  e = error_of([&] { plan_runs({plain, plain}, {}); });
  EXPECT_NE(e.find("are both labelled 'plain-b'"), std::string::npos) << e;

  e = error_of([] { plan_runs({write_toml("bad8.toml", "[base]\nlr = -1\n")}, {}); });
  EXPECT_NE(e.find("bad8.toml' line 2: key 'lr': expected a positive number, finite as a 32-bit float, got -1"),
            std::string::npos)
      << e;
}

TEST(CompareSweep, FlagOverridingASweptKeyIsAnErrorAndBadFlagValuesNameTheFlag) {
  const fs::path s = write_toml("sweep4.toml", "[sweep]\nworkers = [2, 4]\n");
  std::string e = error_of([&] { plan_runs({s}, {{"workers", "8", "--workers"}}); });
  EXPECT_NE(e.find("--workers: sets 'workers', which sweep file"), std::string::npos) << e;
  EXPECT_NE(e.find("sweep4.toml"), std::string::npos) << e;
  e = error_of([&] { plan_runs({s}, {{"batch", "0", "--batch"}}); });
  EXPECT_NE(e.find("--batch: expected an integer >= 1, got 0"), std::string::npos) << e;
}

// A comparison writes each run's metrics and summary in the run's folder: a flag giving them is
// refused, a config file's value replaced. A value of a setting every run would share (the
// checkpoint folder, the resume folder, the model file) is refused, from a flag or from a file.
TEST(CompareSweep, SettingsEveryRunWouldShareAreRefusedNamingWhereTheyCameFrom) {
  const fs::path s = write_toml("sweep9.toml", "[sweep]\nworkers = [2, 4]\n");
  std::string e = error_of([&] { plan_runs({s}, {{"summary", "x.json", "--summary"}}); });
  EXPECT_NE(e.find("--summary: fast compare writes each run's summary itself, in the run's folder under --out"),
            std::string::npos)
      << e;
  e = error_of([&] { plan_runs({s}, {{"metrics", "m.jsonl", "--metrics"}}); });
  EXPECT_NE(e.find("--metrics: fast compare writes each run's metrics itself"), std::string::npos) << e;
  e = error_of([&] { plan_runs({s}, {{"checkpoint_dir", "ck", "--checkpoint-dir"}}); });
  EXPECT_NE(e.find("--checkpoint-dir: every run of the comparison would write its checkpoints to the same folder"),
            std::string::npos)
      << e;
  e = error_of([&] { plan_runs({s}, {{"resume_if_present", "true", "--resume-if-present"}}); });
  EXPECT_NE(e.find("--resume-if-present: every run of the comparison would continue from the same checkpoint"),
            std::string::npos)
      << e;
  // Their defaults are no value: taken.
  EXPECT_EQ(plan_runs({s}, {{"resume_if_present", "false", "--resume-if-present"},
                            {"checkpoint_dir", "", "--checkpoint-dir"}})
                .size(),
            2u);
  const fs::path r = write_toml("sweep10.toml", "[sweep]\nworkers = [2]\n[[run]]\nname = \"a\"\nresume = \"ck\"\n");
  e = error_of([&] { plan_runs({r}, {}); });
  EXPECT_NE(
      e.find("run 'a, workers=2' of '" + r.string() + "': resume = ck: every run of the comparison would continue"),
      std::string::npos)
      << e;
  const fs::path c = write_toml("train1.toml", "save_model = \"m.npy\"\n");
  e = error_of([&] { plan_runs({c}, {}); });
  EXPECT_NE(e.find("run 'train1' of '" + c.string() +
                   "': save_model = m.npy: every run of the comparison would write "
                   "its model to the same file"),
            std::string::npos)
      << e;
  // A config file of fast train with its own metrics and summary: taken, the run's own files set later.
  const fs::path t = write_toml("train2.toml", "metrics = \"out/m.jsonl\"\nsummary = \"out/s.json\"\n");
  EXPECT_EQ(plan_runs({t}, {}).size(), 1u);
  // But a sweep over them: its runs were identical, and none wrote the files it named.
  const fs::path m = write_toml("sweep11.toml", "[sweep]\nmetrics = [\"a.jsonl\", \"b.jsonl\"]\n");
  e = error_of([&] { plan_runs({m}, {}); });
  EXPECT_NE(e.find("sweep file '" + m.string() +
                   "' varies metrics, which changes nothing: fast compare writes each "
                   "run's metrics itself"),
            std::string::npos)
      << e;
}

TEST(CompareSweep, WholeRunChecksNameTheRunBeforeAnythingRuns) {
  // Four slowdown factors fit the 4-worker run only.
  const fs::path s = write_toml("sweep7.toml", "[base]\nslowdown = \"1,1,1,4\"\n[sweep]\nworkers = [4, 2]\n");
  std::string e = error_of([&] { plan_runs({s}, {}); });
  EXPECT_NE(e.find("run 'workers=2' of '" + s.string() + "'"), std::string::npos) << e;
  EXPECT_NE(e.find("slowdown"), std::string::npos) << e;
  // The caller's check (the command checks model names) runs on every run, errors named the same way.
  const fs::path m = write_toml("sweep8.toml", "[sweep]\nmodel = [\"mlp\", \"resnet\"]\n");
  int checked = 0;
  e = error_of([&] {
    plan_runs({m}, {}, [&](const training::TrainOptions& o) {
      ++checked;
      FAST_ENFORCE(o.model == "mlp", "model: unknown name '{}'", o.model);
    });
  });
  EXPECT_EQ(checked, 2);
  EXPECT_NE(e.find("run 'model=resnet' of '" + m.string() + "': model: unknown name 'resnet'"), std::string::npos) << e;
  // A file the check cannot read (a TorchScript model): still an IoError, with the run named.
  try {
    plan_runs({m}, {}, [](const training::TrainOptions& o) {
      FAST_ENFORCE_AS(core::IoError, o.model == "mlp", "model file '{}' cannot be read", o.model);
    });
    ADD_FAILURE() << "expected an IoError";
  } catch (const core::IoError& io) {
    EXPECT_NE(std::string(io.what()).find("run 'model=resnet' of '" + m.string() + "': model file 'resnet'"),
              std::string::npos)
        << io.what();
  }
}

}  // namespace
}  // namespace fast::cli
