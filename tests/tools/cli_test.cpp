// End-to-end tests of the `fast` command: it is run as a child process, its exit code and output
// checked. Damaged datasets are copies of the real files, truncated or corrupted by the test.

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/run_fast.hpp"

namespace {

namespace fs = std::filesystem;
namespace exit_code = fast::core::exit_code;

using Result = fast::testing::FastResult;

Result run_fast(const std::string& args) { return fast::testing::run_fast_in({}, args); }

fs::path temp_dir(const std::string& name) { return fast::testing::test_dir("fast_cli_test", name); }

const fs::path kData = "/usr/share/datasets/fashion-mnist";

// A copy of the dataset with `file` replaced by `bytes` (or removed when remove is true).
fs::path damaged_copy(const std::string& name, const std::string& file, const std::string* bytes) {
  const fs::path dir = temp_dir(name);
  for (const auto& entry : fs::directory_iterator(kData))
    fs::copy_file(entry.path(), dir / entry.path().filename(), fs::copy_options::overwrite_existing);
  if (bytes == nullptr) {
    fs::remove(dir / file);
  } else {
    std::ofstream(dir / file, std::ios::binary | std::ios::trunc) << *bytes;
  }
  return dir;
}

std::string read_prefix(const fs::path& path, std::size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<std::size_t>(in.gcount()));
  return s;
}

// `fast` checks the settings that need neither libtorch nor data before it starts its training
// helper: a copy of `fast` with no helper beside it refuses each mistake below with the helper's
// own message and exit code, and hands a correct command on to the helper, which is missing.
TEST(Cli, SettingsAreRefusedBeforeTheTrainingHelperStarts) {
  const fs::path bin = temp_dir("no_helper") / "bin";
  fs::create_directories(bin);
  fs::copy_file(fs::path(FAST_TEST_BIN_DIR) / "fast", bin / "fast", fs::copy_options::overwrite_existing);
  const auto run = [&](const std::string& args) {
    return fast::testing::run_command((bin / "fast").string() + " " + args + " 2>&1");
  };
  const std::array<std::pair<const char*, const char*>, 4> refused{{
      {"train --checkpoint-every 5", "checkpoint_every: set to 5 without checkpoint_dir"},
      {"train --elastic --strategy adpsgd", "elastic: set, but strategy 'adpsgd' is asynchronous"},
      {"train --dgc-warmup-epochs 1", "dgc_warmup_epochs: set to 1 without dgc"},
      {"train --strategy dpsgd --topology torus2d:3x3 --workers 4", "torus2d:3x3': rows * cols must equal n"},
  }};
  for (const auto& [args, message] : refused) {
    const Result r = run(args);
    EXPECT_EQ(r.code, exit_code::bad_input) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(r.output.find("training helper"), std::string::npos) << args << "\n" << r.output;
  }
  const Result accepted = run("train --steps 1");
  EXPECT_EQ(accepted.code, exit_code::cannot_exec) << accepted.output;
  EXPECT_NE(accepted.output.find("cannot start the training helper"), std::string::npos) << accepted.output;
  // A config file is checked too; a pipe is left unread for the helper (a front-end that opened
  // this one, which has no writer, would block until the timeout: exit 124).
  const fs::path config = bin.parent_path() / "c.toml";
  std::ofstream(config) << "checkpoint_every = 5\n";
  const Result from_file = run("train --config " + config.string());
  EXPECT_EQ(from_file.code, exit_code::bad_input) << from_file.output;
  EXPECT_NE(from_file.output.find("checkpoint_every: set to 5"), std::string::npos) << from_file.output;
  // Several config files apply in order: the first file's key stands beside the second's keys (a
  // second --config replaced the whole first file), and a later file's key overrides it.
  const fs::path second = bin.parent_path() / "c2.toml", overriding = bin.parent_path() / "c3.toml";
  std::ofstream(second) << "steps = 3\n";
  std::ofstream(overriding) << "checkpoint_every = 0\n";
  const Result both = run("train --config " + config.string() + " --config " + second.string());
  EXPECT_EQ(both.code, exit_code::bad_input) << both.output;
  EXPECT_NE(both.output.find("checkpoint_every: set to 5"), std::string::npos) << both.output;
  const Result overridden = run("train --config " + config.string() + " --config " + overriding.string());
  EXPECT_EQ(overridden.code, exit_code::cannot_exec) << overridden.output;
  const fs::path pipe = bin.parent_path() / "c.fifo";
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  const Result from_pipe = fast::testing::run_command("timeout 20 " + (bin / "fast").string() + " train --config " +
                                                      pipe.string() + " 2>&1");
  EXPECT_EQ(from_pipe.code, exit_code::cannot_exec) << from_pipe.output;
}

// `fast train` starts its helper with OPENBLAS_NUM_THREADS=1 where the variable is unset (OpenBLAS
// would otherwise start a pool of spinning threads as libtorch loads) and leaves a value the user
// set: a copy of `fast` whose helper, where the build puts it beside `fast`, is a script that
// prints the variable it was given.
TEST(Cli, TheHelperStartsWithOneOpenBlasThreadUnlessTheUserSetsIt) {
  const fs::path root = temp_dir("openblas_env");
  const fs::path bin = root / "bin";
  fs::create_directories(bin);
  fs::copy_file(fs::path(FAST_TEST_BIN_DIR) / "fast", bin / "fast", fs::copy_options::overwrite_existing);
  const fs::path helper = root / "libexec" / "fast" / "fast-train";
  fs::create_directories(helper.parent_path());
  std::ofstream(helper) << "#!/bin/sh\necho \"helper: OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS-unset}\"\n";
  fs::permissions(helper, fs::perms::owner_all);
  const std::string train = (bin / "fast").string() + " train --steps 1 2>&1";
  const Result unset = fast::testing::run_command("env -u OPENBLAS_NUM_THREADS " + train);
  EXPECT_EQ(unset.code, 0) << unset.output;
  EXPECT_NE(unset.output.find("helper: OPENBLAS_NUM_THREADS=1\n"), std::string::npos) << unset.output;
  const Result set = fast::testing::run_command("env OPENBLAS_NUM_THREADS=3 " + train);
  EXPECT_EQ(set.code, 0) << set.output;
  EXPECT_NE(set.output.find("helper: OPENBLAS_NUM_THREADS=3\n"), std::string::npos) << set.output;
}

TEST(Cli, UnknownStrategyExitsNonZeroListingNames) {
  const Result r = run_fast("train --strategy telepathy");
  EXPECT_EQ(r.code, exit_code::bad_input) << r.output;
  EXPECT_NE(r.output.find("expected one of: allreduce"), std::string::npos) << r.output;
}

// The defaults give a first-time user a good run. A bare `fast train` (mlp, 2 workers,
// one epoch, momentum 0.9 at lr 0.05 with a cosine decay) reaches 0.84; with the earlier defaults
// (sgd at 0.01, constant) it reached 0.73.
TEST(Cli, ABareTrainReachesTheIssuesTarget) {
  const fs::path dir = temp_dir("bare");
  const Result r = run_fast("train --progress never --summary " + (dir / "s.json").string());
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json s = nlohmann::json::parse(fast::testing::slurp(dir / "s.json"));
  EXPECT_EQ(s["model"], "mlp");
  EXPECT_EQ(s["workers"], 2);
  EXPECT_GE(s["final_accuracy"].get<double>(), 0.84) << r.output;
}

TEST(Cli, UnknownModelExitsNonZeroListingNames) {
  const Result r = run_fast("train --model resnet9000 --steps 1");
  EXPECT_EQ(r.code, exit_code::bad_input) << r.output;
  EXPECT_NE(r.output.find("expected one of mlp, cnn, resnet, or a TorchScript file"), std::string::npos) << r.output;
}

// --device is checked before the data is read: a missing data folder is not what is reported.
TEST(Cli, MalformedDeviceExitsNonZeroBeforeReadingData) {
  const Result r = run_fast("train --device gpu --steps 1 --data-dir /nonexistent/fashion");
  EXPECT_EQ(r.code, exit_code::bad_input) << r.output;
  EXPECT_NE(r.output.find("device: expected cpu, cuda or cuda:K (K a GPU index >= 0), got 'gpu'"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("nonexistent"), std::string::npos) << r.output;
}

TEST(Cli, WrongTypeInConfigNamesTheKey) {
  const fs::path cfg = temp_dir("cfg") / "bad.toml";
  std::ofstream(cfg) << "workers = 2\nepochs = \"three\"\n";
  const Result r = run_fast("train --config " + cfg.string());
  EXPECT_EQ(r.code, exit_code::bad_input) << r.output;
  EXPECT_NE(r.output.find("key 'epochs' expects integer, got a string"), std::string::npos) << r.output;
}

TEST(Cli, MissingDatasetFileExitsNonZeroNamingIt) {
  const fs::path dir = damaged_copy("missing", "t10k-labels-idx1-ubyte.gz", nullptr);
  const Result r = run_fast("train --steps 1 --data-dir " + dir.string());
  EXPECT_NE(r.code, exit_code::ok) << r.output;
  EXPECT_NE(r.output.find("t10k-labels-idx1-ubyte.gz"), std::string::npos) << r.output;
}

TEST(Cli, TruncatedDatasetFileExitsNonZeroNamingIt) {
  const std::string part = read_prefix(kData / "train-images-idx3-ubyte.gz", 100000);
  const fs::path dir = damaged_copy("truncated", "train-images-idx3-ubyte.gz", &part);
  const Result r = run_fast("train --steps 1 --data-dir " + dir.string());
  EXPECT_NE(r.code, exit_code::ok) << r.output;
  EXPECT_NE(r.output.find("train-images-idx3-ubyte.gz"), std::string::npos) << r.output;
}

TEST(Cli, CorruptDatasetFileExitsNonZeroNamingIt) {
  std::string bytes = read_prefix(kData / "train-labels-idx1-ubyte.gz", 1 << 20);
  for (std::size_t i = 40; i < bytes.size() && i < 2000; i += 7) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
  const fs::path dir = damaged_copy("corrupt", "train-labels-idx1-ubyte.gz", &bytes);
  const Result r = run_fast("train --steps 1 --data-dir " + dir.string());
  EXPECT_NE(r.code, exit_code::ok) << r.output;
  EXPECT_NE(r.output.find("train-labels-idx1-ubyte.gz"), std::string::npos) << r.output;
}

// Messages that name the setting to change: a batch too large for the training set, a topology
// for a world size it cannot have, a summary handed to fast report.
TEST(Cli, RefusalsNameTheSettingToChange) {
  const Result batch =
      run_fast("train --steps 2 --workers 2 --batch 64 --dataset synthetic:shape=1x8x8,classes=4,train=100,test=10");
  EXPECT_EQ(batch.code, exit_code::bad_input) << batch.output;
  EXPECT_NE(batch.output.find("batch: 2 workers x batch 64 = 128 samples per step, more than the 100 training samples "
                              "of dataset 'synthetic:"),
            std::string::npos)
      << batch.output;
  // A generated dataset's sizes are checked before it is made: its 7.6 GB test set would not fit
  // under a 3 GB address-space limit. Past the checks (a batch it has), the data cannot be made:
  // libtorch's allocation failure, named without its backtrace, exit code 5 (docs/errors.md).
  const auto under_3_gb = [](int batch) {
    return fast::testing::run_command(
        fmt::format("ulimit -v 3000000; {}/fast train --steps 1 --workers 1 --batch {} --dataset "
                    "synthetic:train=10,test=100000000,shape=19 2>&1",
                    FAST_TEST_BIN_DIR, batch));
  };
  const Result early = under_3_gb(32);
  EXPECT_EQ(early.code, exit_code::bad_input) << early.output;
  EXPECT_NE(early.output.find("batch: 1 workers x batch 32 = 32 samples per step, more than the 10 training samples"),
            std::string::npos)
      << early.output;
  const Result oom = under_3_gb(8);
  EXPECT_EQ(oom.code, exit_code::failed) << oom.output;
  EXPECT_NE(oom.output.find("fast: error: libtorch: DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                            "7600000000 bytes."),
            std::string::npos)
      << oom.output;
  EXPECT_EQ(oom.output.find("frame #"), std::string::npos) << oom.output;
  const Result cube = run_fast("train --steps 2 --strategy dpsgd --topology hypercube --workers 3");
  EXPECT_EQ(cube.code, exit_code::bad_input) << cube.output;
  EXPECT_NE(cube.output.find("topology 'hypercube': a hypercube needs a power of two of workers (2, 4, 8, ...), got "
                             "n = 3"),
            std::string::npos)
      << cube.output;
  const fs::path dir = temp_dir("report_summary");
  const fs::path summary = dir / "s.json";
  const Result run = run_fast(
      "train --steps 2 --progress never --dataset synthetic:shape=1x8x8,classes=4,train=64,test=8 --batch 8 "
      "--summary " +
      summary.string());
  ASSERT_EQ(run.code, exit_code::ok) << run.output;
  const Result report = run_fast("report " + summary.string());
  EXPECT_EQ(report.code, exit_code::bad_input) << report.output;
  EXPECT_NE(report.output.find("is a run's summary (--summary); expected its metrics file"), std::string::npos)
      << report.output;
  fs::remove_all(dir);
}

// A metrics file whose last line was cut off mid-write (a run killed while writing it) makes a
// page of the records before it, with a warning; a malformed line elsewhere is still refused.
TEST(Cli, ReportLeavesOutAnIncompleteLastRecord) {
  const fs::path dir = temp_dir("report_cut");
  const Result run = run_fast(
      "train --steps 4 --progress never --dataset synthetic:shape=1x8x8,classes=4,train=64,test=8 --batch 8 "
      "--log-every 1 --metrics " +
      (dir / "m.jsonl").string());
  ASSERT_EQ(run.code, exit_code::ok) << run.output;
  const std::string whole = fast::testing::slurp(dir / "m.jsonl");
  {
    std::ofstream cut(dir / "cut.jsonl");
    cut << whole << "{\"event\":\"train\",\"st";
  }
  const Result report = run_fast("report " + (dir / "cut.jsonl").string());
  EXPECT_EQ(report.code, exit_code::ok) << report.output;
  EXPECT_NE(report.output.find("cut.jsonl' line " + std::to_string(std::count(whole.begin(), whole.end(), '\n') + 1) +
                               ": an incomplete last record, left out"),
            std::string::npos)
      << report.output;
  EXPECT_TRUE(fs::exists(dir / "cut.html"));
  {
    std::ofstream middle(dir / "middle.jsonl");
    middle << "{\"event\":\"train\",\"st\n" << whole;
  }
  const Result refused = run_fast("report " + (dir / "middle.jsonl").string());
  EXPECT_EQ(refused.code, exit_code::bad_input) << refused.output;
  EXPECT_NE(refused.output.find("middle.jsonl' line 1: expected a metrics record"), std::string::npos)
      << refused.output;
  fs::remove_all(dir);
}

TEST(Cli, ShortRunWritesSummaryAndMetrics) {
  const fs::path dir = temp_dir("run");
  const Result r = run_fast(
      "train --model mlp --workers 2 --steps 30 --batch 32 --optimizer adam --lr 0.001 "
      "--progress never --log-every 10 --metrics " +
      (dir / "m.jsonl").string() + " --summary " + (dir / "s.json").string());
  ASSERT_EQ(r.code, exit_code::ok) << r.output;
  EXPECT_NE(r.output.find("final test accuracy"), std::string::npos) << r.output;
  std::ifstream in(dir / "s.json");
  const nlohmann::json s = nlohmann::json::parse(in);
  for (const char* key : {"strategy", "workers", "steps", "final_accuracy", "wall_seconds", "samples_per_second",
                          "bytes_sent", "param_norm"})
    EXPECT_TRUE(s.contains(key)) << key;
  EXPECT_EQ(s["strategy"], "allreduce");
  EXPECT_EQ(s["workers"], 2);
  EXPECT_EQ(s["steps"], 30);
  // 30 steps of Adam on the MLP already beat chance (0.1) by far.
  EXPECT_GT(s["final_accuracy"].get<double>(), 0.5);
  EXPECT_LE(s["final_accuracy"].get<double>(), 1.0);
  // Ring all-reduce with W = 2: each worker sends its two segments once, 2 (W-1)/W |g| = |g| floats
  // per step, plus one all-reduce of the 3 evaluation sums (3 doubles) at the end.
  const std::uint64_t params = s["parameters"].get<std::uint64_t>();
  EXPECT_EQ(s["bytes_sent"].get<std::uint64_t>(), 2 * (30 * params * 4 + 3 * 8));
  // Metrics: start, 3 train records per worker, one eval, end.
  std::ifstream m(dir / "m.jsonl");
  std::string line;
  int train = 0, eval = 0, start = 0, end = 0;
  while (std::getline(m, line)) {
    const auto j = nlohmann::json::parse(line);
    const std::string ev = j["event"];
    train += ev == "train";
    eval += ev == "eval";
    start += ev == "start";
    end += ev == "end";
  }
  EXPECT_EQ(start, 1);
  EXPECT_EQ(train, 6);
  EXPECT_EQ(eval, 1);
  EXPECT_EQ(end, 1);
}

// The metrics to standard output, a pipe here (run_fast reads it through popen), beside a summary
// file: /dev/stdout names the pipe, which no canonical path resolves; both outputs are written.
TEST(Cli, MetricsToAPipedStandardOutputBesideASummaryFile) {
  const fs::path dir = temp_dir("piped_metrics");
  const Result r = run_fast(
      "train --model mlp --workers 2 --steps 4 --batch 32 --progress never --metrics /dev/stdout "
      "--summary " +
      (dir / "s.json").string());
  ASSERT_EQ(r.code, exit_code::ok) << r.output;
  EXPECT_NE(r.output.find("\"event\":\"end\""), std::string::npos) << r.output;
  std::ifstream in(dir / "s.json");
  EXPECT_EQ(nlohmann::json::parse(in)["steps"], 4) << r.output;
  fs::remove_all(dir);
}

// A flag given twice takes its last value, as argparse does ("$COMMON --steps 3" overrides a
// --steps in $COMMON). The summary records what ran.
TEST(Cli, AFlagGivenTwiceTakesItsLastValue) {
  const fs::path dir = temp_dir("twice");
  const Result r = run_fast(
      "train --workers 3 --steps 40 --progress always --workers 1 --steps 3 --progress never --dataset "
      "synthetic:train=256,test=64 --summary " +
      (dir / "s.json").string());
  ASSERT_EQ(r.code, exit_code::ok) << r.output;
  std::ifstream in(dir / "s.json");
  const nlohmann::json s = nlohmann::json::parse(in);
  EXPECT_EQ(s["workers"], 1);
  EXPECT_EQ(s["steps"], 3);
  EXPECT_EQ(r.output.find("| step "), std::string::npos) << r.output;  // --progress never: no live line
}

// Settings that change nothing are accepted (a sweep may set them for some runs) and named in a
// warning before the run starts: a strategy option of other strategies only, and a setting another
// setting turns off, with that setting.
TEST(Cli, SettingsThatChangeNothingAreNamedInAWarning) {
  const Result r = run_fast(
      "train --workers 1 --steps 2 --strategy dpsgd --mode async --topology ring --consensus-step 0.5 --progress never "
      "--dataset synthetic:train=256,test=64 --data-dir /nonexistent --schedule cosine --step-size 5 --checkpoint-keep "
      "3 "
      "--straggler-factor 3 --sim-threads 2 --workers-per-process 2");
  ASSERT_EQ(r.code, exit_code::ok) << r.output;
  for (const char* warning :
       {"mode: an option of ps; dpsgd does not read it", "consensus_step: changes nothing with compress = 'none'",
        "data_dir: changes nothing with dataset = 'synthetic:train=256,test=64'",
        "step_size: changes nothing with schedule = cosine", "checkpoint_keep: changes nothing with no checkpoint_dir",
        "straggler_factor: changes nothing with straggler_probability = 0",
        "sim_threads: changes nothing with runtime = threads",
        "workers_per_process: changes nothing with runtime = threads"})
    EXPECT_NE(r.output.find(std::string("fast train: warning: ") + warning), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("warning: topology"), std::string::npos) << r.output;  // dpsgd reads it
}

// Options DGC cannot honour are refused before any data is read (the data folder does not exist).
TEST(Cli, DgcRefusesWhatItCannotApplyBeforeReadingData) {
  const std::string base = "train --steps 1 --data-dir /nonexistent/fast-data --dgc ";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"--compress fp16 --optimizer momentum", "compress = 'fp16'"},
      {"--compress topk:ratio=0.01 --optimizer adam", "optimizer = 'adam'"},
      {"--compress topk:ratio=0.01 --optimizer momentum --strategy dpsgd", "strategy 'dpsgd' sends models"},
      // Out of its declared range: refused by the flag itself.
      {"--compress topk:ratio=0.01 --optimizer momentum --dgc-warmup-ratio 2",
       "--dgc-warmup-ratio: expected a number in (0, 1], got 2"},
  };
  for (const auto& [flags, needle] : cases) {
    const Result r = run_fast(base + flags);
    EXPECT_EQ(r.code, exit_code::bad_input) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << flags << "\n" << r.output;
    EXPECT_EQ(r.output.find("/nonexistent/fast-data"), std::string::npos) << flags << "\n" << r.output;
  }
  const Result warmup = run_fast("train --steps 1 --data-dir /nonexistent/fast-data --dgc-warmup-epochs 1");
  EXPECT_EQ(warmup.code, exit_code::bad_input) << warmup.output;
  EXPECT_NE(warmup.output.find("without dgc"), std::string::npos) << warmup.output;
}

// A short DGC run trains, and every message is a top-1% payload: per encode at most
// 16 (header) + 9 + 4k values + min(4k, ceil(n/8)) index bytes with k = ceil(0.01 n).
TEST(Cli, DgcRunTrainsWithTopOnePercentMessages) {
  const fs::path dir = temp_dir("dgc");
  const Result r = run_fast(
      "train --model mlp --workers 2 --steps 60 --optimizer momentum --lr 0.05 --dgc "
      "--compress topk:ratio=0.01 --progress never --summary " +
      (dir / "s.json").string());
  ASSERT_EQ(r.code, exit_code::ok) << r.output;
  std::ifstream in(dir / "s.json");
  const nlohmann::json s = nlohmann::json::parse(in);
  EXPECT_GT(s["final_accuracy"].get<double>(), 0.5);
  const auto n = s["parameters"].get<std::uint64_t>();
  const std::uint64_t k = (n + 99) / 100;
  const std::uint64_t bound = 16 + 9 + 4 * k + std::min<std::uint64_t>(4 * k, (n + 7) / 8);
  const auto raw = s["compressed_raw_bytes"].get<std::uint64_t>();
  const auto wire = s["compressed_wire_bytes"].get<std::uint64_t>();
  EXPECT_EQ(raw, 2 * 60 * 4 * n);  // 60 encodes of the whole gradient per worker
  EXPECT_LE(wire, 2 * 60 * bound);
  EXPECT_GE(wire, 2 * 60 * (16 + 9 + 5 * k));  // at least the k values and one byte per index
}

}  // namespace

namespace {

// fast train's lockstep workers agree on a stop (SIGINT/SIGTERM) after every k-th step but the
// last, k = floor(2e9 / flops per step) in [1, 64] (trainer.cpp): each agreement is an all-gather
// of one double, 8 bytes per worker with 2 workers. With --model-flops F and batch 32, k = 1 for
// F = 1e8 (3.2e9 flops a step: steps 1..29 agree) and k = 3 for F = 2e7 (6.4e8: steps 3, 6, .., 27).
// The bytes are the training's of ShortRunWritesSummaryAndMetrics plus 2 x 8 per agreement.
TEST(Cli, LockstepWorkersAgreeOnStoppingAtStepsFixedByTheModelsFlops) {
  const fs::path dir = temp_dir("stop_agreement");
  for (const auto& [flops, agreements] : {std::pair<const char*, std::uint64_t>{"1e8", 29}, {"2e7", 9}}) {
    const Result r = run_fast(std::string("train --model mlp --workers 2 --steps 30 --batch 32 --progress never ") +
                              "--model-flops " + flops + " --summary " + (dir / "s.json").string());
    ASSERT_EQ(r.code, exit_code::ok) << r.output;
    std::ifstream in(dir / "s.json");
    const nlohmann::json s = nlohmann::json::parse(in);
    const std::uint64_t params = s["parameters"].get<std::uint64_t>();
    EXPECT_EQ(s["bytes_sent"].get<std::uint64_t>(), 2 * (30 * params * 4 + 3 * 8) + agreements * 2 * 8) << flops;
  }
}

// docs/config.md describes the full build: the runtime setting lists every runtime.
TEST(Cli, ConfigDocIsUpToDate) {
#if !defined(FAST_TEST_SIM) || !defined(FAST_TEST_ZMQ) || !defined(FAST_TEST_MPI)
  GTEST_SKIP() << "this build lacks a runtime, which its settings table leaves out";
#endif
  const Result r = run_fast("config-doc");
  ASSERT_EQ(r.code, exit_code::ok) << r.output;
  std::ifstream in(fs::path(FAST_TEST_SOURCE_DIR) / "docs" / "config.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(doc.find(r.output), std::string::npos)
      << "docs/config.md is stale: regenerate its table with `build/bin/fast config-doc`";
}

// A boolean setting is a flag without a value; the zmq settings are listed with the variable
// each one defaults to.
TEST(Cli, InsecureIsAFlagWithoutAValueAndZmqSettingsAreListed) {
  const Result help = run_fast("train --help");
  ASSERT_EQ(help.code, exit_code::ok) << help.output;
  for (const char* flag : {"--rendezvous", "--world-size", "--process-rank", "--workers-per-process", "--key",
                           "--allow", "--insecure", "--peer-timeout", "--rendezvous-timeout", "--transport", "--host"})
    EXPECT_NE(help.output.find(flag), std::string::npos) << flag;
  EXPECT_NE(help.output.find("FAST_RENDEZVOUS"), std::string::npos);
  const fs::path dir = temp_dir("insecure");
  const Result r =
      run_fast("train --insecure --model mlp --workers 1 --steps 2 --batch 16 --progress never --summary " +
               (dir / "s.json").string());
  ASSERT_EQ(r.code, exit_code::ok) << r.output;
  std::ifstream in(dir / "s.json");
  const nlohmann::json s = nlohmann::json::parse(in);
  EXPECT_EQ(s["param_hash"].get<std::string>().size(), 16u) << s.dump();
}

// A boolean that defaults to true is turned off by its --no- flag; final = best, which scores
// every replica, refuses it before any data is read.
TEST(Cli, NoReplicaAccuracyLeavesMinAndMaxUnscored) {
  const fs::path dir = temp_dir("replica_accuracy");
  const std::string common = "train --model mlp --workers 2 --strategy dpsgd --steps 2 --batch 16 --progress never ";
  const Result off = run_fast(common + "--no-replica-accuracy --summary " + (dir / "off.json").string());
  ASSERT_EQ(off.code, exit_code::ok) << off.output;
  const Result on = run_fast(common + "--summary " + (dir / "on.json").string());
  ASSERT_EQ(on.code, exit_code::ok) << on.output;
  std::ifstream off_in(dir / "off.json"), on_in(dir / "on.json");
  const nlohmann::json a = nlohmann::json::parse(off_in), b = nlohmann::json::parse(on_in);
  EXPECT_EQ(a["replica_accuracy_min"], -1);
  EXPECT_EQ(a["replica_accuracy_max"], -1);
  EXPECT_GT(b["replica_accuracy_min"].get<double>(), 0.0) << b.dump();
  EXPECT_EQ(a["param_hash"], b["param_hash"]);  // only the scoring differs
  EXPECT_EQ(a["final_accuracy"], b["final_accuracy"]);
  const Result best = run_fast(common + "--final best --no-replica-accuracy");
  EXPECT_EQ(best.code, exit_code::bad_input) << best.output;
  EXPECT_NE(best.output.find("replica_accuracy"), std::string::npos) << best.output;
}

TEST(Cli, HelpListsEverySettingAndTheEnvironment) {
  const Result r = run_fast("train --help");
  EXPECT_EQ(r.code, exit_code::ok) << r.output;
  for (const char* flag :
       {"--config", "--strategy", "--workers", "--model", "--dataset", "--epochs", "--steps", "--batch", "--lr",
        "--optimizer", "--seed", "--runtime", "--metrics", "--summary", "--data-dir"})
    EXPECT_NE(r.output.find(flag), std::string::npos) << flag;
  EXPECT_NE(r.output.find("FAST_OP_TIMEOUT"), std::string::npos);
}

}  // namespace

namespace {

// The rows of a CSV file whose fields hold no comma or quote (labels here are file stems).
std::vector<std::vector<std::string>> read_simple_csv(const fs::path& path) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields(1);
    for (char ch : line) {
      if (ch == ',') {
        fields.emplace_back();
      } else {
        fields.back() += ch;
      }
    }
    rows.push_back(fields);
  }
  return rows;
}

TEST(Cli, CompareRunsTwoConfigsAndTabulatesTheirSummaries) {
  const fs::path dir = temp_dir("compare");
  fs::remove_all(dir / "out");
  std::ofstream(dir / "ar.toml") << "model = \"mlp\"\nsteps = 20\nworkers = 2\nbatch = 32\nstrategy = \"allreduce\"\n";
  std::ofstream(dir / "lsgd.toml") << "model = \"mlp\"\nsteps = 20\nworkers = 2\nbatch = 32\nstrategy = \"local-sgd\"\n"
                                      "period = 5\n";
  const Result r = run_fast("compare " + (dir / "ar.toml").string() + " " + (dir / "lsgd.toml").string() +
                            " --optimizer adam --lr 0.001 --progress never --out " + (dir / "out").string());
  ASSERT_EQ(r.code, exit_code::ok) << r.output;
  EXPECT_NE(r.output.find("[1/2] ar (repetition 1/1, seed 1)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[2/2] lsgd: final accuracy"), std::string::npos) << r.output;

  const auto rows = read_simple_csv(dir / "out" / "compare.csv");
  ASSERT_EQ(rows.size(), 3u);
  const auto& header = rows[0];
  auto col = [&](const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    EXPECT_NE(it, header.end()) << name;
    return static_cast<std::size_t>(it - header.begin());
  };
  const std::string md = [&] {
    std::ifstream in(dir / "out" / "compare.md");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }();
  const std::vector<std::pair<std::string, std::string>> runs{{"ar", "allreduce"}, {"lsgd", "local-sgd"}};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& row = rows[i + 1];
    ASSERT_EQ(row.size(), header.size());
    const fs::path summary_path =
        dir / "out" / ("0" + std::to_string(i + 1) + "-" + runs[i].first) / "1" / "summary.json";
    std::ifstream in(summary_path);
    ASSERT_TRUE(in.good()) << summary_path;
    const nlohmann::json s = nlohmann::json::parse(in);
    EXPECT_TRUE(fs::exists(summary_path.parent_path() / "metrics.jsonl"));
    EXPECT_EQ(row[col("run")], runs[i].first);
    EXPECT_EQ(row[col("strategy")], runs[i].second);
    EXPECT_EQ(s["strategy"], runs[i].second);
    EXPECT_EQ(row[col("runtime")], "threads");
    EXPECT_EQ(row[col("workers")], "2");
    EXPECT_EQ(row[col("codec")], "none");
    EXPECT_EQ(row[col("repeats")], "1");
    EXPECT_EQ(std::stod(row[col("final_accuracy")]), s["final_accuracy"].get<double>());
    EXPECT_EQ(std::stoull(row[col("bytes_sent")]), s["bytes_sent"].get<std::uint64_t>());
    EXPECT_EQ(std::stod(row[col("staleness_mean")]), s["staleness_mean"].get<double>());
    EXPECT_EQ(std::stod(row[col("consensus_distance")]), s["consensus_distance"].get<double>());
    EXPECT_EQ(std::stod(row[col("wall_seconds")]), s["wall_seconds"].get<double>());
    if (s["time_to_target_seconds"].is_null()) {
      EXPECT_EQ(row[col("time_to_target_seconds")], "");
    } else {
      EXPECT_EQ(std::stod(row[col("time_to_target_seconds")]), s["time_to_target_seconds"].get<double>());
    }
    // The Markdown row: label, strategy, and the accuracy with four decimals.
    const std::string md_start = "| " + runs[i].first + " | " + runs[i].second + " |";
    const std::size_t at = md.find(md_start);
    ASSERT_NE(at, std::string::npos) << md;
    const std::string md_row = md.substr(at, md.find('\n', at) - at);
    char acc[32];
    std::snprintf(acc, sizeof acc, "| %.4f |", s["final_accuracy"].get<double>());
    EXPECT_NE(md_row.find(acc), std::string::npos) << md_row;
  }
  // The ring all-reduce of 2 workers sends |g| floats per worker per step (see ShortRunWritesSummaryAndMetrics);
  // local-sgd averages the models every 5 steps only, so it sends less.
  EXPECT_LT(std::stoull(rows[2][col("bytes_sent")]), std::stoull(rows[1][col("bytes_sent")]));
}

TEST(Cli, CompareRejectsABadSweepBeforeRunningAnything) {
  const fs::path dir = temp_dir("compare-bad");
  fs::remove_all(dir / "out");
  std::ofstream(dir / "good.toml") << "steps = 1\n";
  std::ofstream(dir / "sweep.toml") << "[sweep]\nworkers = [2]\nstrategy = [\"allreduce\", \"telepathy\"]\n";
  const Result r = run_fast("compare " + (dir / "good.toml").string() + " " + (dir / "sweep.toml").string() +
                            " --out " + (dir / "out").string());
  EXPECT_EQ(r.code, exit_code::bad_input) << r.output;
  EXPECT_NE(r.output.find("sweep.toml' line 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("key 'strategy'"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out")) << "nothing may run before every file is checked";
}

// Settings valid one by one but not together (dpsgd needs an undirected graph; exponential is
// directed), in the second run of a sweep: refused with the run named before the first run starts.
TEST(Cli, CompareChecksEveryRunAsTrainWouldBeforeRunningAnything) {
  const fs::path dir = temp_dir("compare-bad-run");
  fs::remove_all(dir / "out");
  std::ofstream(dir / "sweep.toml") << "[base]\nworkers = 4\nsteps = 1\n\n[[run]]\nname = \"fine\"\n"
                                       "strategy = \"allreduce\"\n\n[[run]]\nname = \"directed\"\n"
                                       "strategy = \"dpsgd\"\ntopology = \"exponential\"\n";
  const Result r = run_fast("compare " + (dir / "sweep.toml").string() + " --out " + (dir / "out").string());
  EXPECT_EQ(r.code, exit_code::bad_input) << r.output;
  EXPECT_NE(r.output.find("run 'directed' of '" + (dir / "sweep.toml").string() + "'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("topology 'exponential' is directed"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out")) << "the first run started before the second was checked";
}

}  // namespace
