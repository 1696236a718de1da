// `fast compare` without libtorch: the table built from summaries, the Markdown and CSV writers,
// and the runner with a fake training function (its plan: compare_plan_test.cpp).

#include <gtest/gtest.h>

#include <csignal>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error_message.hpp"
#include "common/test_dir.hpp"
#include "compare.hpp"
#include "compare_plan.hpp"
#include "compare_table.hpp"
#include "config.hpp"
#include "fast/core/error.hpp"
#include "fast/core/stop_request.hpp"
#include "fast/runtime/launcher.hpp"
#include "fast/training/run_identity.hpp"
#include "report.hpp"

namespace fast::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path temp_dir() { return fast::testing::test_dir("fast_compare_test", "files"); }

fs::path write_toml(const std::string& name, const std::string& body) {
  const fs::path path = temp_dir() / name;
  std::ofstream(path) << body;
  return path;
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// RFC 4180 reader for the tests: rows of fields.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        rows.back().back() += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        rows.back().back() += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      rows.back().emplace_back();
    } else if (ch == '\n') {
      rows.emplace_back(1);
    } else {
      rows.back().back() += ch;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  return rows;
}

std::size_t column_index(const std::string& name) {
  const auto& cols = compare_columns();
  for (std::size_t j = 0; j < cols.size(); ++j)
    if (cols[j].name == name) return j;
  ADD_FAILURE() << "no column " << name;
  return 0;
}

TEST(CompareTable, MedianOfOddEvenAndInfiniteValues) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({inf, 1, 2}), 2);
  EXPECT_TRUE(std::isinf(median({inf, inf, 2})));
  EXPECT_TRUE(std::isinf(median({inf, 1})));
  EXPECT_TRUE(std::isnan(median({})));
}

json summary(double accuracy, json time_to_target, std::uint64_t bytes, double wall, bool diverged = false) {
  return {{"strategy", "adpsgd"},
          {"runtime", "threads"},
          {"workers", 4},
          {"final_accuracy", accuracy},
          {"time_to_target_seconds", time_to_target},
          {"bytes_sent", bytes},
          {"staleness_mean", 1.5},
          {"staleness_max", 7},
          {"consensus_distance", 0.0125},
          {"wall_seconds", wall},
          {"diverged", diverged}};
}

TEST(CompareTable, RowsAreMediansOfTheSummariesAndSettings) {
  RunResult r;
  r.label = "adpsgd, ring";
  r.options.worker.strategy.name = "adpsgd";
  r.options.worker.strategy.compress = "fp16";
  r.options.worker.strategy.topology = "torus2d:2x2";
  r.summaries = {summary(0.81, 2.5, 1000, 4.0), summary(0.85, nullptr, 3000, 5.0, true), summary(0.83, 1.5, 2000, 6.0)};
  RunResult never;
  never.label = "never";
  never.summaries = {summary(0.5, nullptr, 10, 1.0), summary(0.6, nullptr, 10, 1.0)};
  RunResult blown;
  blown.label = "blown";
  blown.summaries = {summary(0.1, nullptr, 10, 1.0, true), summary(0.1, nullptr, 10, 1.0, true)};
  const CompareTable t = build_table({r, never, RunResult{"not run", {}, {}}, blown});
  ASSERT_EQ(t.rows.size(), 3u);
  const auto& row = t.rows[0];
  auto csv = [&](const std::string& c) { return row[column_index(c)].csv; };
  auto md = [&](const std::string& c) { return row[column_index(c)].md; };
  EXPECT_EQ(csv("run"), "adpsgd, ring");
  EXPECT_EQ(csv("strategy"), "adpsgd");
  EXPECT_EQ(csv("topology"), "torus2d:2x2");
  EXPECT_EQ(csv("codec"), "fp16");
  // `cluster` is a setting only where the sim runtime exists; "-" otherwise.
  const settings::ConfigKey* cluster = settings::find_config_key("cluster");
  EXPECT_EQ(csv("cluster"), cluster == nullptr || cluster->get(r.options).empty() ? "-" : cluster->get(r.options));
  EXPECT_EQ(csv("runtime"), "threads");
  EXPECT_EQ(csv("workers"), "4");
  EXPECT_EQ(csv("final_accuracy"), "0.83");
  EXPECT_EQ(md("final_accuracy"), "0.8300");
  EXPECT_EQ(csv("time_to_target_seconds"), "2.5");  // {1.5, 2.5, never}
  EXPECT_EQ(csv("target_reached"), "2");
  EXPECT_EQ(csv("bytes_sent"), "2000");
  EXPECT_EQ(md("bytes_sent"), "0.0");  // MB
  EXPECT_EQ(csv("staleness_mean"), "1.5");
  EXPECT_EQ(csv("staleness_max"), "7");
  EXPECT_EQ(csv("consensus_distance"), "0.0125");
  EXPECT_EQ(md("consensus_distance"), "0.0125");
  EXPECT_EQ(csv("wall_seconds"), "5");
  EXPECT_EQ(md("wall_seconds"), "5.0");
  EXPECT_EQ(csv("repeats"), "3");
  const auto& row2 = t.rows[1];
  EXPECT_EQ(row2[column_index("final_accuracy")].csv, "0.55");
  EXPECT_EQ(row2[column_index("time_to_target_seconds")].csv, "");
  EXPECT_EQ(row2[column_index("time_to_target_seconds")].md, "");
  EXPECT_EQ(row2[column_index("target_reached")].csv, "0");
  // diverged: how many repetitions diverged; Markdown no / K of N / yes.
  EXPECT_EQ(csv("diverged"), "1");
  EXPECT_EQ(md("diverged"), "1 of 3");
  EXPECT_EQ(row2[column_index("diverged")].md, "no");
  EXPECT_EQ(t.rows[2][column_index("diverged")].csv, "2");
  EXPECT_EQ(t.rows[2][column_index("diverged")].md, "yes");
}

// A strategy option the run's strategy does not read shows "-", whatever the setting says.
TEST(CompareTable, AnOptionTheStrategyDoesNotReadShowsDash) {
  RunResult r;
  r.label = "allreduce";
  r.options.worker.strategy.name = "allreduce";
  r.options.worker.strategy.topology = "torus2d:2x2";
  r.summaries = {summary(0.8, 1.0, 10, 1.0)};
  RunResult gossip = r;
  gossip.options.worker.strategy.name = "dpsgd";
  const CompareTable t = build_table({r, gossip});
  EXPECT_EQ(t.rows[0][column_index("topology")].csv, "-");
  EXPECT_EQ(t.rows[1][column_index("topology")].csv, "torus2d:2x2");
}

TEST(CompareTable, MissingSummaryFieldShowsDash) {
  RunResult r{"old", {}, {json{{"strategy", "allreduce"}, {"final_accuracy", 0.5}}}};
  const CompareTable t = build_table({r});
  EXPECT_EQ(t.rows[0][column_index("bytes_sent")].csv, "-");
  EXPECT_EQ(t.rows[0][column_index("workers")].csv, "-");
  EXPECT_EQ(t.rows[0][column_index("final_accuracy")].csv, "0.5");
}

TEST(CompareTable, CsvQuotesAndMarkdownEscapes) {
  RunResult r{"a, \"b\" | c", {}, {summary(0.9, 1.0, 1, 1.0)}};
  const CompareTable t = build_table({r});
  const std::string csv = to_csv(t);
  const auto rows = parse_csv(csv);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].size(), compare_columns().size());
  EXPECT_EQ(rows[0][0], "run");
  EXPECT_EQ(rows[1][0], "a, \"b\" | c");
  EXPECT_NE(csv.find("\"a, \"\"b\"\" | c\""), std::string::npos) << csv;
  const std::string md = to_markdown(t);
  EXPECT_NE(md.find("| a, \"b\" \\| c |"), std::string::npos) << md;
  EXPECT_EQ(md.substr(0, md.find('\n')).find("| run | strategy | topology | codec | cluster |"), 0u) << md;
}

TEST(CompareRun, RepetitionsUseSuccessiveSeedsAndWriteEveryFile) {
  const fs::path out = temp_dir() / "out1";
  fs::remove_all(out);
  const fs::path s =
      write_toml("sweep5.toml", "[base]\nseed = 10\nsteps = 5\n[sweep]\nstrategy = [\"allreduce\", \"adpsgd\"]\n");
  const auto specs = plan_runs({s}, {});
  std::vector<std::pair<std::string, std::uint64_t>> calls;
  const TrainFn fake = [&](const training::TrainOptions& o) {
    calls.emplace_back(o.summary.string(), o.seed);
    json j = summary(0.5 + 0.01 * static_cast<double>(o.seed), nullptr, 100 * o.seed, 1.0);
    j["strategy"] = o.worker.strategy.name;
    return j;
  };
  std::FILE* log = std::tmpfile();
  const auto results = run_comparison(specs, {.out = out, .repeat = 3}, fake, log);
  ASSERT_EQ(calls.size(), 6u);
  EXPECT_EQ(calls[0],
            std::make_pair((out / "01-strategy-allreduce" / "1" / "summary.json").string(), std::uint64_t{10}));
  EXPECT_EQ(calls[2],
            std::make_pair((out / "01-strategy-allreduce" / "3" / "summary.json").string(), std::uint64_t{12}));
  EXPECT_EQ(calls[3], std::make_pair((out / "02-strategy-adpsgd" / "1" / "summary.json").string(), std::uint64_t{10}));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].summaries.size(), 3u);

  const auto rows = parse_csv(read(out / "compare.csv"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1][column_index("run")], "strategy=allreduce");
  EXPECT_EQ(rows[2][column_index("strategy")], "adpsgd");
  EXPECT_EQ(rows[1][column_index("final_accuracy")], "0.61");  // median over seeds 10, 11, 12
  EXPECT_EQ(rows[1][column_index("bytes_sent")], "1100");
  EXPECT_EQ(rows[1][column_index("repeats")], "3");
  EXPECT_NE(read(out / "compare.md").find("| strategy=adpsgd | adpsgd |"), std::string::npos);

  // config.toml names the run (the report's label) and reproduces its settings.
  EXPECT_EQ(read(out / "02-strategy-adpsgd" / "config.toml").rfind("# run: strategy=adpsgd\n", 0), 0u);
  training::TrainOptions back;
  settings::apply_config_file(back, out / "02-strategy-adpsgd" / "config.toml");
  EXPECT_EQ(back.worker.strategy.name, "adpsgd");
  EXPECT_EQ(back.seed, 10u);
  EXPECT_EQ(back.steps, 5);
  EXPECT_EQ(config_toml(back), config_toml(specs[1].options));

  // One progress line before and one after each run.
  std::rewind(log);
  std::string text;
  for (int ch = std::fgetc(log); ch != EOF; ch = std::fgetc(log)) text += static_cast<char>(ch);
  std::fclose(log);
  EXPECT_NE(text.find("[1/6] strategy=allreduce (repetition 1/3, seed 10)"), std::string::npos) << text;
  EXPECT_NE(text.find("[6/6] strategy=adpsgd: final accuracy 0.6200, time to target not reached"), std::string::npos)
      << text;
}

TEST(CompareRun, AFailedRunKeepsTheFinishedRowsAndPropagates) {
  const fs::path out = temp_dir() / "out2";
  fs::remove_all(out);
  const auto specs = plan_runs({write_toml("sweep6.toml", "[sweep]\nworkers = [2, 3]\n")}, {});
  const TrainFn fake = [](const training::TrainOptions& o) {
    FAST_ENFORCE_AS(core::IoError, o.workers == 2, "peer gone");
    return summary(0.7, 1.0, 5, 1.0);
  };
  EXPECT_THROW(run_comparison(specs, {.out = out, .repeat = 1}, fake, nullptr), core::IoError);
  const auto rows = parse_csv(read(out / "compare.csv"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1][column_index("run")], "workers=2");
}

// A fake run that writes its summary file, as `fast train` does, with its run identity, the
// settings it was given and the file's fingerprint.
json write_summary(const training::TrainOptions& o) {
  json j = summary(0.5, nullptr, 100, 1.0);
  j["strategy"] = o.worker.strategy.name;
  json run = training::settings_identity(o, training::workers_before_launch(o));
  training::add_model_fields(run, 7, core::flat_layout(7), 60);
  j["run"] = training::with_fingerprint(std::move(run));
  j["settings"] = json::parse(o.process.shared_settings);
  std::ofstream(o.summary) << training::with_fingerprint(j).dump();
  return j;
}

TEST(CompareRun, ARerunSkipsTheRepetitionsThatFinishedWithTheSameSettings) {
  const fs::path out = temp_dir() / "out3";
  fs::remove_all(out);
  const fs::path s = write_toml("sweep7.toml", "[base]\nsteps = 5\n[sweep]\nstrategy = [\"allreduce\", \"adpsgd\"]\n");
  int calls = 0;
  const TrainFn fake = [&](const training::TrainOptions& o) {
    ++calls;
    return write_summary(o);
  };
  run_comparison(plan_runs({s}, {}), {.out = out, .repeat = 2}, fake, nullptr);
  EXPECT_EQ(calls, 4);
  // The same sweep again: every repetition is read back, none is run; the table is whole.
  const auto again = run_comparison(plan_runs({s}, {}), {.out = out, .repeat = 2}, fake, nullptr);
  EXPECT_EQ(calls, 4);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[1].summaries.size(), 2u);
  EXPECT_EQ(parse_csv(read(out / "compare.csv")).size(), 3u);
  // One more repetition: only the third of each configuration runs. The kept repetitions and the
  // new ones are numbered once each, and a run's end line carries its start line's number.
  std::FILE* log = std::tmpfile();
  run_comparison(plan_runs({s}, {}), {.out = out, .repeat = 3}, fake, log);
  EXPECT_EQ(calls, 6);
  std::rewind(log);
  std::string text;
  for (int ch = std::fgetc(log); ch != EOF; ch = std::fgetc(log)) text += static_cast<char>(ch);
  std::fclose(log);
  // (Every kept repetition is known before the runs start.)
  EXPECT_NE(text.find("[2/6] strategy=allreduce (repetition 2/3): done before"), std::string::npos) << text;
  EXPECT_NE(text.find("[4/6] strategy=adpsgd (repetition 2/3): done before"), std::string::npos) << text;
  EXPECT_NE(text.find("[5/6] strategy=allreduce (repetition 3/3, seed"), std::string::npos) << text;
  EXPECT_NE(text.find("[5/6] strategy=allreduce: final accuracy"), std::string::npos) << text;
  EXPECT_NE(text.find("[6/6] strategy=adpsgd (repetition 3/3, seed"), std::string::npos) << text;
  EXPECT_NE(text.find("[6/6] strategy=adpsgd: final accuracy"), std::string::npos) << text;
  // Changed settings (steps 6): every repetition runs again.
  const fs::path changed =
      write_toml("sweep7.toml", "[base]\nsteps = 6\n[sweep]\nstrategy = [\"allreduce\", \"adpsgd\"]\n");
  run_comparison(plan_runs({changed}, {}), {.out = out, .repeat = 3}, fake, nullptr);
  EXPECT_EQ(calls, 12);
  // Changed again (steps 7) with fewer repetitions: the third repetitions, of steps 6, are not
  // run, and a later --repeat 3 of steps 7 must run its third instead of taking theirs.
  const fs::path fewer =
      write_toml("sweep7.toml", "[base]\nsteps = 7\n[sweep]\nstrategy = [\"allreduce\", \"adpsgd\"]\n");
  run_comparison(plan_runs({fewer}, {}), {.out = out, .repeat = 2}, fake, nullptr);
  EXPECT_EQ(calls, 16);
  std::vector<std::int64_t> steps;
  const TrainFn record_steps = [&](const training::TrainOptions& o) {
    steps.push_back(o.steps);
    return fake(o);
  };
  run_comparison(plan_runs({fewer}, {}), {.out = out, .repeat = 3}, record_steps, nullptr);
  EXPECT_EQ(steps, (std::vector<std::int64_t>{7, 7}));  // each configuration's third repetition
}

// A summary copied from another repetition (another seed) is refused before any run, naming the
// file, the field and both values; one without a run identity (an older FAST's) is run again.
TEST(CompareRun, ASummaryOfAnotherRepetitionIsRefusedAndOneWithoutIdentityRunsAgain) {
  const fs::path out = temp_dir() / "out3b";
  fs::remove_all(out);
  const fs::path s = write_toml("sweep7b.toml", "[base]\nsteps = 5\nseed = 3\n");
  int calls = 0;
  const TrainFn fake = [&](const training::TrainOptions& o) {
    ++calls;
    return write_summary(o);
  };
  run_comparison(plan_runs({s}, {}), {.out = out, .repeat = 2}, fake, nullptr);
  ASSERT_EQ(calls, 2);
  fs::path dir;  // the one configuration's folder
  for (const auto& entry : fs::directory_iterator(out))
    if (entry.is_directory()) dir = entry.path();
  ASSERT_TRUE(fs::exists(dir / "2" / "summary.json")) << "no folder " << dir;
  fs::copy_file(dir / "2" / "summary.json", dir / "1" / "summary.json", fs::copy_options::overwrite_existing);
  fast::testing::expect_error<core::InvalidArgument>(
      [&] { run_comparison(plan_runs({s}, {}), {.out = out, .repeat = 2}, fake, nullptr); },
      {(dir / "1" / "summary.json").string(), "with seed = 4; this run has seed = 3"});
  EXPECT_EQ(calls, 2);
  // A summary whose identity was edited by hand (its seed made this repetition's) no longer matches
  // its fingerprint.
  json edited = json::parse(read(dir / "2" / "summary.json"));
  edited["run"]["seed"] = 3;
  std::ofstream(dir / "1" / "summary.json", std::ios::trunc) << edited.dump();
  fast::testing::expect_error<core::InvalidArgument>(
      [&] { run_comparison(plan_runs({s}, {}), {.out = out, .repeat = 2}, fake, nullptr); },
      {(dir / "1" / "summary.json").string(), "not that of the run identity it carries", "the file was edited"});
  EXPECT_EQ(calls, 2);
  json older = json::parse(read(dir / "2" / "summary.json"));
  older.erase("run");
  std::ofstream(dir / "1" / "summary.json", std::ios::trunc) << older.dump();
  run_comparison(plan_runs({s}, {}), {.out = out, .repeat = 2}, fake, nullptr);
  EXPECT_EQ(calls, 3);
}

// A summary copied from another configuration whose settings differ only outside the run identity
// (the learning rate), and one whose results were edited, are refused before any run, naming the
// file and what differs: both were kept, the table showing another run's or a made-up result.
TEST(CompareRun, ASummaryOfOtherSettingsOrEditedResultsIsRefused) {
  const fs::path out = temp_dir() / "out3c";
  fs::remove_all(out);
  const fs::path s = write_toml("sweep7c.toml", "[base]\nsteps = 5\n[sweep]\nlr = [0.05, 0.2]\n");
  int calls = 0;
  const TrainFn fake = [&](const training::TrainOptions& o) {
    ++calls;
    return write_summary(o);
  };
  run_comparison(plan_runs({s}, {}), {.out = out, .repeat = 1}, fake, nullptr);
  ASSERT_EQ(calls, 2);
  const fs::path low = out / "01-lr-0-05" / "1" / "summary.json", high = out / "02-lr-0-2" / "1" / "summary.json";
  ASSERT_TRUE(fs::exists(low) && fs::exists(high)) << "no summaries in " << out;
  const std::string high_text = read(high);
  fs::copy_file(low, high, fs::copy_options::overwrite_existing);
  fast::testing::expect_error<core::InvalidArgument>(
      [&] { run_comparison(plan_runs({s}, {}), {.out = out, .repeat = 1}, fake, nullptr); },
      {"the summary of another configuration: lr = 0.05 in '" + high.string() + "', 0.2 in this repetition"});
  EXPECT_EQ(calls, 2);
  json edited = json::parse(high_text);
  edited["final_accuracy"] = 0.999;
  std::ofstream(high, std::ios::trunc) << edited.dump();
  fast::testing::expect_error<core::InvalidArgument>(
      [&] { run_comparison(plan_runs({s}, {}), {.out = out, .repeat = 1}, fake, nullptr); },
      {high.string(), "has the summary fingerprint", "the file was edited"});
  EXPECT_EQ(calls, 2);
  std::ofstream(high, std::ios::trunc) << high_text;  // as the run wrote it: kept
  run_comparison(plan_runs({s}, {}), {.out = out, .repeat = 1}, fake, nullptr);
  EXPECT_EQ(calls, 2);
}

// A stop request (SIGINT, SIGTERM to fast compare) during a run: the run stops as fast train's does
// (its summary marked interrupted), no other starts, and the interrupted run is neither tabulated
// nor reused: the same command runs it again.
TEST(CompareRun, AStopEndsTheSweepAfterTheRunUnderWayWhichRunsAgainNextTime) {
  const fs::path out = temp_dir() / "out3d";
  fs::remove_all(out);
  const fs::path s = write_toml("sweep7d.toml", "[base]\nsteps = 5\n[sweep]\nstrategy = [\"allreduce\", \"adpsgd\"]\n");
  int calls = 0;
  const TrainFn interrupted = [&](const training::TrainOptions& o) {
    ++calls;
    core::request_stop(SIGINT);  // arrives during the first run
    json j = write_summary(o);
    j["interrupted"] = true;
    std::ofstream(o.summary, std::ios::trunc) << training::with_fingerprint(j).dump();
    return j;
  };
  const auto results = run_comparison(plan_runs({s}, {}), {.out = out, .repeat = 1}, interrupted, nullptr);
  core::clear_stop_request();
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].summaries.empty() && results[1].summaries.empty());
  const TrainFn whole = [&](const training::TrainOptions& o) {
    ++calls;
    return write_summary(o);
  };
  const auto again = run_comparison(plan_runs({s}, {}), {.out = out, .repeat = 1}, whole, nullptr);
  EXPECT_EQ(calls, 3);  // both: the interrupted one again
  EXPECT_EQ(again[0].summaries.size(), 1u);
}

// --jobs 2: the simulated runs go two at a time (the first two meet inside train, which only
// happens if they run at once); the threads run goes after them, alone.
TEST(CompareRun, JobsRunSimulatedRunsSideBySideAndOthersAlone) {
  const auto names = runtime::runtime_names();
  if (std::find(names.begin(), names.end(), "sim") == names.end()) GTEST_SKIP() << "built without the sim runtime";
  const fs::path out = temp_dir() / "out4";
  fs::remove_all(out);
  const fs::path s = write_toml("sweep8.toml", "[sweep]\nruntime = [\"threads\", \"sim\"]\nworkers = [2, 3]\n");
  std::mutex m;
  std::condition_variable cv;
  int in_flight = 0, max_in_flight = 0, sims_started = 0;
  std::vector<std::string> order;
  int threads_run_saw = -1;
  const TrainFn fake = [&](const training::TrainOptions& o) {
    std::unique_lock<std::mutex> lock(m);
    ++in_flight;
    max_in_flight = std::max(max_in_flight, in_flight);
    order.push_back(o.runtime);
    if (o.runtime == "sim" && ++sims_started <= 2) {
      cv.notify_all();
      EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return sims_started >= 2; }))
          << "the first two simulated runs did not run at the same time";
    }
    if (o.runtime == "threads") threads_run_saw = in_flight;
    --in_flight;
    lock.unlock();
    return write_summary(o);
  };
  run_comparison(plan_runs({s}, {}), {.out = out, .repeat = 1, .jobs = 2}, fake, nullptr);
  EXPECT_EQ(max_in_flight, 2);
  EXPECT_EQ(order, (std::vector<std::string>{"sim", "sim", "threads", "threads"}));
  EXPECT_EQ(threads_run_saw, 1);
}

// A run's config.toml leaves out the strategy options only other strategies read (a sweep's base
// may set them for some runs): they change nothing for it, and its `fast train` would warn.
TEST(CompareRun, ConfigTomlLeavesOutOptionsOtherStrategiesRead) {
  training::TrainOptions o;
  o.worker.strategy.mode = "ssp";                   // ps
  o.worker.strategy.lr_semantics = "per-gradient";  // ps
  o.worker.strategy.topology = "hypercube";         // dpsgd, adpsgd, gosgd, acid
  o.worker.strategy.name = "allreduce";
  std::string text = config_toml(o);
  EXPECT_EQ(text.find("mode"), std::string::npos) << text;
  EXPECT_EQ(text.find("lr_semantics"), std::string::npos) << text;
  EXPECT_EQ(text.find("topology"), std::string::npos) << text;
  o.worker.strategy.name = "ps";
  text = config_toml(o);
  EXPECT_NE(text.find("mode = \"ssp\""), std::string::npos) << text;
  EXPECT_NE(text.find("lr_semantics = \"per-gradient\""), std::string::npos) << text;
  EXPECT_EQ(text.find("topology"), std::string::npos) << text;
  o.worker.strategy.name = "dpsgd";
  EXPECT_NE(config_toml(o).find("topology = \"hypercube\""), std::string::npos);
}

TEST(CompareRun, SlugIsLowercaseAlphanumericAndDashes) {
  EXPECT_EQ(slug("strategy=adpsgd, workers=4"), "strategy-adpsgd-workers-4");
  EXPECT_EQ(slug("PS async (s=4)"), "ps-async-s-4");
  EXPECT_EQ(slug("!!!"), "run");
  EXPECT_EQ(slug(std::string(100, 'a')).size(), 60u);
}

// The page inlines the data as JSON inside a <script> element, where any "</" would end the
// element early: each becomes "<\/" (the same JSON string), and nothing else changes.
// A folder of metrics files holds one run per NAME: its file NAME.jsonl, or its processes'
// NAME.rankR.jsonl, merged. A folder of one run is titled by the folder, the runs of several by NAME.
TEST(ReportPage, AFolderOfTwoRunsMetricsGivesOneRunEach) {
  const fs::path dir = temp_dir() / "report_runs";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string start = R"({"event":"start","time":0,"strategy":"allreduce"})";
  const std::string train = R"({"event":"train","time":1,"worker":0,"step":1})";
  std::ofstream(dir / "m.rank0.jsonl") << start << "\n" << train << "\n";
  std::ofstream(dir / "m.rank2.jsonl") << start << "\n";
  const auto one = read_report_runs(dir);
  ASSERT_EQ(one.size(), 1u);  // the two processes' files of one run
  EXPECT_EQ(one[0].label, "report_runs");
  EXPECT_EQ(one[0].records.size(), 2u);  // one start kept, and the train record
  std::ofstream(dir / "other.jsonl") << start << "\n";
  const auto two = read_report_runs(dir);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].label, "m");
  EXPECT_EQ(two[0].records.size(), 2u);
  EXPECT_EQ(two[1].label, "other");
  EXPECT_EQ(two[1].records.size(), 1u);
}

// fast report --out naming a folder is refused (InvalidArgument: exit code 2) before anything is
// read, with the file it expected; it was an I/O error (exit code 3) after reading every run.
TEST(ReportPage, AnOutThatIsAFolderIsRefusedBeforeReading) {
  const fs::path dir = temp_dir() / "report_out_folder";
  fs::remove_all(dir);
  fs::create_directories(dir / "page");
  fast::testing::expect_error<core::InvalidArgument>(
      [&] { write_report(dir / "missing-run.jsonl", dir / "page"); },
      {"--out '" + (dir / "page").string() + "' is a folder", (dir / "page" / "report.html").string()});
  // A path ending in a separator names a folder too, even one that does not exist yet.
  fast::testing::expect_error<core::InvalidArgument>([&] { write_report(dir / "missing-run.jsonl", dir / "new" / ""); },
                                                     {"is a folder", (dir / "new" / "report.html").string()});
}

// The file form names a run: its --metrics path NAME.jsonl, which a run of several processes
// writes as NAME.rankR.jsonl, and each of those rank files, stand for every NAME.rankR.jsonl beside
// them (the hint of the refusal above works); a file of another run beside them is left out.
TEST(ReportPage, AMetricsPathOrOneRankFileStandsForEveryRankFileOfItsRun) {
  const fs::path dir = temp_dir() / "report_rank_files";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto train = [](int worker) {
    return json{{"event", "train"}, {"time", 0.1}, {"worker", worker}, {"step", 1}, {"samples", 10}}.dump();
  };
  const std::string start = R"({"event":"start","time":0,"strategy":"allreduce","workers":2})";
  std::ofstream(dir / "m.rank0.jsonl") << start << "\n" << train(0) << "\n";
  std::ofstream(dir / "m.rank1.jsonl") << start << "\n" << train(1) << "\n";
  std::ofstream(dir / "mm.rank0.jsonl") << start << "\n" << train(0) << "\n";  // another run
  for (const fs::path& given : {dir / "m.jsonl", dir / "m.rank1.jsonl"}) {
    const auto runs = read_report_runs(given);
    ASSERT_EQ(runs.size(), 1u) << given;
    EXPECT_EQ(runs[0].label, "m") << given;
    ASSERT_EQ(runs[0].records.size(), 3u) << given;  // one start, the two processes' train records
    EXPECT_EQ(runs[0].records[1]["worker"].get<int>() + runs[0].records[2]["worker"].get<int>(), 1) << given;
  }
  fast::testing::expect_error<core::IoError>([&] { read_report_runs(dir / "n.jsonl"); },
                                             {"n.jsonl' does not exist", "n.rankR.jsonl"});
  // The page goes beside them as m.html; an --out in folders not made yet makes them, and one under
  // a file says why it cannot.
  EXPECT_EQ(write_report(dir / "m.rank0.jsonl"), dir / "m.html");
  EXPECT_TRUE(fs::is_regular_file(dir / "m.html"));
  EXPECT_EQ(write_report(dir / "m.jsonl", dir / "new" / "folders" / "p.html"), dir / "new" / "folders" / "p.html");
  EXPECT_TRUE(fs::is_regular_file(dir / "new" / "folders" / "p.html"));
  fast::testing::expect_error<core::IoError>([&] { write_report(dir / "m.jsonl", dir / "m.html" / "p.html"); },
                                             {"cannot write", "p.html': cannot create its folder"});
}

// An elastic run of 3 workers (batch 10) loses worker 2 at step 12: the accuracy's samples axis
// counts 12 steps of 3 workers and then 2 (12 x 30 + 8 x 20 = 520 at step 20, not 20 x 30), the
// survivors' records of the steps up to the loss (written before the membership record) make a
// round of their own, the rounds after hold one record per member of the group, and the records
// after the last full round (worker 0's at step 20) make the last point.
TEST(ReportPage, SamplesFollowTheGroupAfterAnElasticLoss) {
  const auto train = [](int worker, int step, double loss) {
    return json{{"event", "train"}, {"time", step * 0.1}, {"worker", worker}, {"step", step},
                {"samples", step * 10}, {"loss", loss}, {"bytes_sent", step * 100}};
  };
  ReportRun run{.label = "zel"};
  run.records.push_back({{"event", "start"}, {"time", 0}, {"workers", 3}, {"batch", 10}});
  for (int w = 0; w < 3; ++w) run.records.push_back(train(w, 5, 1.0 + w));
  for (int w = 0; w < 3; ++w) run.records.push_back(train(w, 10, 0.5));
  for (int w = 0; w < 2; ++w) run.records.push_back(train(w, 12, 0.75));  // up to the loss
  run.records.push_back({{"event", "membership"}, {"time", 1.2}, {"worker", 2}, {"change", "lost"},
                         {"detail", ""}, {"step", 12}, {"workers", 2}});
  for (int step : {15, 18})
    for (int w = 0; w < 2; ++w) run.records.push_back(train(w, step, 0.25));
  run.records.push_back(train(0, 20, 0.125));
  run.records.push_back({{"event", "eval"}, {"time", 2.0}, {"step", 20}, {"accuracy", 0.5}});
  run.records.push_back({{"event", "end"}, {"time", 2.1}});
  const json data = report_data({run}, "t");
  const json& r = data["runs"][0];
  ASSERT_EQ(r["evals"].size(), 1u);
  EXPECT_DOUBLE_EQ(r["evals"][0][1].get<double>(), 12 * 30 + 8 * 20);
  const json& loss = r["loss"];
  ASSERT_EQ(loss.size(), 6u) << loss.dump();
  // The group's samples at each round's last step, as the accuracy's: 3 workers to step 12, then 2.
  const std::vector<double> samples{5 * 30, 10 * 30, 12 * 30, 360 + 3 * 20, 360 + 6 * 20, 360 + 8 * 20};
  const std::vector<double> mean{2.0, 0.5, 0.75, 0.25, 0.25, 0.125};
  for (std::size_t i = 0; i < samples.size(); ++i) {
    EXPECT_DOUBLE_EQ(loss[i][1].get<double>(), samples[i]) << i;
    EXPECT_DOUBLE_EQ(loss[i][2].get<double>(), mean[i]) << i;
  }
  EXPECT_DOUBLE_EQ(r["bytes"].back()[1].get<double>(), 2000 + 1800 + 1000);
}

// "</script" would close the data's element, and "<!--" with "<script" would take the page's script
// into it (the HTML parser's escaped states): every '<' of the data is written \u003c.
TEST(ReportPage, InlinedDataCannotCloseItsScriptElement) {
  const json data = {{"title", "a</script><script>boom()</script></"},
                     {"runs", json::array({"x</y", "</</", "a <!-- <script> b"})}};
  const std::string page = report_html(data);
  EXPECT_EQ(page.find("</script><script>boom()"), std::string::npos);
  EXPECT_EQ(page.find("<!-- <script>"), std::string::npos);
  std::string expect;  // the dump with every '<' escaped, written out independently
  for (const char c : data.dump()) expect += c == '<' ? std::string("\\u003c") : std::string(1, c);
  EXPECT_NE(page.find(expect), std::string::npos) << expect;
  EXPECT_EQ(json::parse(expect), data);  // the escape is the same JSON
}

}  // namespace
}  // namespace fast::cli
