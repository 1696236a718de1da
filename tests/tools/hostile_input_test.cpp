// Hostile or mistaken input to `fast train` and `fast compare` (issue "Faults, resume and hostile
// input", item 4): each is refused with exit code 2 and a message naming the setting, before any
// data is read (the line "libtorch intra-op threads", printed once the dataset is loaded, never
// appears) and without hanging (every run is bounded by `timeout`).

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/run_fast.hpp"

namespace {

namespace fs = std::filesystem;
namespace exit_code = fast::core::exit_code;

struct Case {
  std::string env;                    // "NAME=VALUE " prefix, or ""
  std::string args;                   // after `fast`
  std::vector<std::string> expected;  // parts of the message
};

fast::testing::FastResult run(const Case& c) {
  return fast::testing::run_command(c.env + "timeout -k 5 60 " + std::string(FAST_TEST_BIN_DIR) + "/fast " + c.args +
                                    " --progress never 2>&1");
}

// `early`: the error comes before the dataset is read (the sim runtime reads its platform file when
// the simulation starts, after it).
void expect_refused(const Case& c, bool early = true) {
  const auto r = run(c);
  EXPECT_EQ(r.code, exit_code::bad_input) << c.env << c.args << "\n" << r.output;
  for (const std::string& part : c.expected)
    EXPECT_NE(r.output.find(part), std::string::npos) << c.env << c.args << ": no '" << part << "' in\n" << r.output;
  if (early) {
    EXPECT_EQ(r.output.find("libtorch intra-op threads"), std::string::npos)
        << c.env << c.args << ": the dataset was loaded before the error\n"
        << r.output;
    // Nor did the run announce itself ("fast train: STRATEGY, N workers (RUNTIME), model ...").
    EXPECT_EQ(r.output.find("per worker, optimizer"), std::string::npos)
        << c.env << c.args << ": the run's line was printed before the error\n"
        << r.output;
  }
  // No build paths: the source location FAST_ENFORCE records is not shown to the user.
  EXPECT_EQ(r.output.find(".cpp:"), std::string::npos) << c.env << c.args << "\n" << r.output;
  EXPECT_EQ(r.output.find("check '"), std::string::npos) << c.env << c.args << "\n" << r.output;
}

TEST(HostileInput, NumbersThatDoubleHoldsButNoSettingMeansAreRefused) {
  for (const Case& c : std::vector<Case>{
           {"", "train --steps 5 --lr 1e39", {"--lr", "a positive number, finite as a 32-bit float", "got 1e39"}},
           {"", "train --steps 5 --lr inf", {"--lr", "finite", "'inf'"}},
           {"", "train --steps 5 --slowdown inf,inf", {"--slowdown", "finite", "'inf'"}},
           {"", "train --steps 5 --straggler-probability 0.5 --straggler-factor inf", {"--straggler-factor", "finite"}},
           {"", "train --steps 5 --straggler-probability 2", {"--straggler-probability", "[0, 1]", "got 2"}},
           {"", "train --steps 5 --op-timeout 1e10", {"--op-timeout", "(0, 1000000000]", "got 1e10"}},
           {"", "train --steps 5 --op-timeout inf", {"--op-timeout", "finite"}},
           {"FAST_OP_TIMEOUT=1e10 ", "train --steps 5", {"FAST_OP_TIMEOUT", "1e9"}},
           {"", "train --epochs 20000000000000000", {"epochs", "1000000", "20000000000000000"}},
           {"", "train --target-accuracy 2", {"--target-accuracy", "[0, 1]", "got 2"}},
           {"", "train --optimizer momentum --momentum 2", {"--momentum", "[0, 1)", "got 2"}},
           {"FAST_TORCH_THREADS=100000 ", "train --steps 5", {"FAST_TORCH_THREADS", "1024", "100000"}},
           {"FAST_TORCH_THREADS=-3 ", "train --steps 5", {"FAST_TORCH_THREADS", "got -3"}},
           {"FAST_MALLOC=jemalloc ", "train --steps 5", {"FAST_MALLOC", "tuned or system", "'jemalloc'"}},
           {"FAST_LOG_LEVEL=verbose ",
            "train --steps 5",
            {"environment variable FAST_LOG_LEVEL", "error, warn, info, debug", "'verbose'"}},
           {"FAST_COLLECTIVES=nccl ",
            "train --steps 5",
            {"environment variable FAST_COLLECTIVES", "fast or native", "'nccl'"}},
           {"FAST_WINDOWS=x ",
            "train --steps 5 --strategy adpsgd",
            {"environment variable FAST_WINDOWS", "service or rma", "'x'"}},
       })
    expect_refused(c);
}

// Integers beyond their type (2^32 + 3, 2^63) from the environment and from a cluster file: each is
// refused naming the variable or the key and the value as given, never read modulo 2^32.
TEST(HostileInput, IntegersBeyondTheirTypeAreRefusedNamingTheVariableOrKey) {
  std::vector<Case> cases{
      {"FAST_TORCH_THREADS=4294967299 ", "train --steps 5", {"FAST_TORCH_THREADS", "0 to 1024", "got 4294967299"}},
      {"FAST_TORCH_THREADS=9223372036854775808 ",
       "train --steps 5",
       {"FAST_TORCH_THREADS", "got '9223372036854775808'"}},
      {"FAST_TORCH_THREADS=2.5 ", "train --steps 5", {"FAST_TORCH_THREADS", "expected an integer, got '2.5'"}},
  };
#ifdef FAST_TEST_SIM
  const fs::path dir = fast::testing::test_dir("fast_hostile", "integers");
  std::ofstream(dir / "cores.toml") << "[hosts]\ncount = 2\ncores = 4294967299\n";
  std::ofstream(dir / "host.toml") << "[hosts]\ncount = 2\n[[failures]]\nhost = -1\noff = 1\n";
  cases.push_back({"",
                   "train --steps 5 --runtime sim --workers 2 --cluster " + (dir / "cores.toml").string(),
                   {"cores.toml", "'hosts.cores'", "from 1 to 65536", "got 4294967299"}});
  cases.push_back({"",
                   "train --steps 5 --runtime sim --workers 2 --cluster " + (dir / "host.toml").string(),
                   {"host.toml", "'failures[0].host'", "got -1"}});
#endif
  for (const Case& c : cases) expect_refused(c);
}

// Strategy and optimizer options that only the strategy's constructor used to check, after the
// dataset was loaded.
TEST(HostileInput, StrategyAndOptimizerOptionsAreCheckedBeforeAnyDataIsRead) {
  for (const Case& c : std::vector<Case>{
           {"", "train --steps 5 --strategy ps --servers 10", {"servers", "[1, 2]", "got 10"}},
           {"",
            "train --steps 5 --strategy ps --lr-semantics per-batch",
            {"--lr-semantics", "per-batch", "per-sample, per-gradient"}},
           {"", "train --steps 5 --strategy easgd --alpha 1.5", {"alpha", "(0, 1)", "got 1.5"}},
           {"", "train --steps 5 --strategy dpsgd --workers 4 --topology torus2d:3x3", {"torus2d:3x3", "= 9 vs n = 4"}},
           {"",
            "train --steps 5 --strategy adpsgd --workers 4 --topology exponential-peer",
            {"topology 'exponential-peer': a time-varying schedule, which gosgd takes", "static undirected graph",
             "hypercube, random-regular"}},
           {"", "train --steps 5 --strategy gosgd --gossip-probability 2", {"--gossip-probability", "(0, 1]", "got 2"}},
           {"", "train --steps 5 --strategy acid --comm-rate 100", {"--comm-rate", "(0, 64]", "got 100"}},
           {"", "train --steps 5 --strategy local-sgd --period 0", {"period", "got 0"}},
           {"", "train --steps 5 --optimizer adam --beta1 2", {"beta1", "[0, 1)", "got 2"}},
           {"", "train --steps 5 --slowdown 1,2,3", {"slowdown", "(2)", "got 3"}},
       })
    expect_refused(c);
}

// A mistyped flag: in place of CLI11's list of the words it did not expect, each flag the command
// does not have, with the nearest option of the command it was given to; the words after it (its
// value, a launched command) are left out.
TEST(HostileInput, AMistypedFlagIsAnsweredWithTheNearestOption) {
  for (const Case& c : std::vector<Case>{
           {"",
            "train --steps 5 --stratgy dpsgd",
            {"fast: error: --stratgy: not an option of train (did you mean --strategy?)\nRun `fast train --help` for "
             "the options."}},
           {"",
            "train --steps 5 --peer-timeot=2",
            {"fast: error: --peer-timeot: not an option of train (did you mean --peer-timeout?)\n"}},
           {"",
            "launch --restrat 1 -n 2 -- true",
            {"fast launch: error: --restrat: not an option of launch (did you mean --restart?)\nRun `fast launch "
             "--help` "
             "for the options."}},
           {"",
            "train --stratgy dpsgd --wrkers 2",
            {"fast: error: --stratgy: not an option of train (did you mean --strategy?); --wrkers: not an option of "
             "train (did you mean --workers?)\n"}},
           {"", "compare", {"fast compare: error: files is required\nRun `fast compare --help` for the options."}},
           {"",
            "trian --steps 5",
            {"fast: error: trian: not a command of fast (did you mean train?); the commands: train, compare, report"}},
           // PyTorch's examples spell it --batch-size: the option it begins.
           {"",
            "train --steps 5 --batch-size 8",
            {"fast: error: --batch-size: not an option of train (did you mean --batch?)"}},
           // A word that is not a flag: the parser's list.
           {"", "train --steps 5 extra", {"fast: error: The following argument was not expected: extra\n"}},
       })
    expect_refused(c);
  // Nothing near: the flag alone.
  const auto far = run({"", "train --steps 5 --telepathy", {}});
  EXPECT_EQ(far.code, exit_code::bad_input) << far.output;
  EXPECT_NE(far.output.find("fast: error: --telepathy: not an option of train\n"), std::string::npos) << far.output;
  EXPECT_EQ(far.output.find("did you mean"), std::string::npos) << far.output;
}

// Model and dataset specs: named and refused before any data is read.
TEST(HostileInput, ModelAndDatasetSpecsAreCheckedBeforeAnyDataIsRead) {
  for (const Case& c : std::vector<Case>{
           {"",
            "train --steps 5 --dataset cifar10",
            {"dataset spec 'cifar10'", "unknown name 'cifar10'", "fashion-mnist, npz, npy, synthetic"}},
           {"", "train --steps 5 --dataset synthetic:classes=1", {"key 'classes'", "in [2, 100000]", "got '1'"}},
           {"", "train --steps 5 --dataset synthetic:shape=1x0", {"key 'shape'", "got '1x0'"}},
           {"",
            "train --steps 5 --compress int8:levels=200",
            {"codec spec 'int8:levels=200'", "key 'levels'", "[1, 127]", "got '200'"}},
           {"", "train --steps 5 --aggregate krum:x", {"aggregate spec 'krum:x'", "F (value 1 of krum:F)", "got 'x'"}},
           {"", "train --steps 5 --dataset npz:train=/nonexistent.npz", {"npz needs test (npz:train=TRAIN,test=TEST)"}},
           {"", "train --steps 5 --model resnet50", {"'resnet50'", "mlp, cnn, resnet", "TorchScript file"}},
           // A near name is suggested (core/suggest.hpp), for a model as for a flag's value.
           {"", "train --steps 5 --model cnm", {"unknown name 'cnm' (did you mean 'cnn'?)"}},
           {"", "train --steps 5 --strategy adpgsd", {"unknown value 'adpgsd' (did you mean 'adpsgd'?)"}},
           {"", "train --steps 5 --model-flops -1", {"--model-flops", "got -1"}},
       })
    expect_refused(c);
  // A missing file is an IoError (exit code 3, docs/errors.md), also found before any data is read.
  const auto r = run({"", "train --steps 5 --model ./missing.pt", {}});
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("model ./missing.pt: no such file"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("libtorch intra-op threads"), std::string::npos) << r.output;
}

TEST(HostileInput, FoldersWhereFilesAreExpectedAreRefused) {
  const fs::path dir = fast::testing::test_dir("fast_hostile", "folder");
  const std::string d = dir.string();
  std::vector<Case> cases{
      {"", "train --config " + d, {"config file", d, "is a folder"}},
      {"", "compare " + d + " --out " + d + "/out", {"config file", d, "is a folder"}},
      {"", "train --steps 5 --summary " + d, {"summary", d, "is a folder"}},
      {"", "train --steps 5 --metrics " + d, {"metrics", d, "is a folder"}},
      {"",
       "train --steps 5 --metrics " + d + "/x.json --summary " + d + "/x.json",
       {"metrics and summary", "x.json", "overwrite"}},
      {"", "train --steps 5 --strategy dpsgd --topology file:" + d, {"edge list", d, "is a folder"}},
      {"", "train --steps 5 --model " + d, {"model " + d, "is a folder", "TorchScript file"}},
      {"", "train --steps 5 --dataset npz:train=" + d + ",test=" + d, {"train: '" + d + "' is a folder"}},
  };
#ifdef FAST_TEST_SIM
  cases.push_back({"", "train --runtime sim --cluster " + d, {"cluster file", d, "is a folder"}});
#endif
  for (const Case& c : cases) expect_refused(c);
  fs::remove_all(dir);
}

// Outputs that could only fail when written, after training: a path below a regular file, and a
// folder in which no file can be created even by root (/proc), for each output.
TEST(HostileInput, OutputsThatCannotBeWrittenAreRefusedBeforeAnyDataIsRead) {
  const fs::path dir = fast::testing::test_dir("fast_hostile", "unwritable");
  std::ofstream(dir / "plain") << "a regular file\n";
  const std::string plain = (dir / "plain").string();
  std::vector<Case> cases;
  for (const auto& [flag, key, name] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"--checkpoint-dir", "checkpoint_dir", "ck"},
                                                                      {"--summary", "summary", "s.json"},
                                                                      {"--metrics", "metrics", "m.jsonl"},
                                                                      {"--save-model", "save_model", "m.npy"}}) {
    cases.push_back(
        {"",
         "train --steps 5 " + flag + " " + plain + "/" + name,
         {key + ": cannot create '" + plain + "/" + name + "'", "'" + plain + "' is a file, not a folder"}});
    cases.push_back({"",
                     "train --steps 5 " + flag + " /proc/fast-test/" + name,
                     {key + ": cannot create '/proc/fast-test/" + name + "'", "no file can be created in '/proc'"}});
  }
  for (const Case& c : cases) expect_refused(c);
  fs::remove_all(dir);
}

// Paths the system cannot follow (a loop of symbolic links, a name longer than a file system
// takes) were an "unexpected error" (exit 1) once touched: each is refused with exit 2 naming the
// setting and the system's reason.
TEST(HostileInput, PathsTheSystemCannotFollowAreRefusedNamingTheSetting) {
  const fs::path dir = fast::testing::test_dir("fast_hostile", "odd_paths");
  fs::remove(dir / "loop");
  fs::create_symlink("loop", dir / "loop");
  const std::string loop = (dir / "loop").string();
  const std::string long_name = (dir / std::string(300, 'n')).string();
  for (const Case& c : std::vector<Case>{
           {"", "train --steps 5 --resume " + loop, {"resume: cannot use the path", "symbolic links"}},
           {"", "train --steps 5 --resume " + long_name, {"resume: cannot use the path", "too long"}},
           {"",
            "train --steps 5 --checkpoint-dir " + loop + "/ck",
            {"checkpoint_dir: cannot use the path", "symbolic"}},
           {"", "train --steps 5 --checkpoint-dir " + long_name, {"checkpoint_dir: cannot use the path", "too long"}},
           {"", "train --steps 5 --summary " + long_name, {"summary: cannot use the path", "too long"}},
           {"", "train --steps 5 --metrics " + loop + "/m.jsonl", {"metrics: cannot use the path", "symbolic"}},
       })
    expect_refused(c);
  fs::remove_all(dir);
}

// SimGrid platform files: a malformed or empty file was "unexpected error" (exit 1), two hosts
// without a route aborted the process (exit 134) at the first message.
TEST(HostileInput, BadPlatformFilesAreRefusedWithExitCode2) {
#ifndef FAST_TEST_SIM
  GTEST_SKIP() << "this build has no sim runtime";
#endif
  const fs::path dir = fast::testing::test_dir("fast_hostile", "platforms");
  std::ofstream(dir / "noroute.xml")
      << "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
         "<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">"
         "<host id=\"h0\" speed=\"1Gf\"/><host id=\"h1\" speed=\"1Gf\"/></zone></platform>\n";
  std::ofstream(dir / "empty.xml") << "\n";
  std::ofstream(dir / "bad.xml") << "<platform\n";
  const std::string d = dir.string();
  for (const Case& c : std::vector<Case>{
           {"",
            "train --runtime sim --steps 3 --cluster " + d + "/noroute.xml",
            {"no route from host 'h0' to host 'h1'"}},
           {"", "train --runtime sim --steps 3 --cluster " + d + "/empty.xml", {"empty.xml", "SimGrid cannot read it"}},
           {"", "train --runtime sim --steps 3 --cluster " + d + "/bad.xml", {"bad.xml", "SimGrid cannot read it"}},
       })
    expect_refused(c, /*early=*/false);
  fs::remove_all(dir);
}

// The zmq runtime's own settings (runtime::check_launch_options), before any data is read: no
// rendezvous in a process that no launcher started (told how to start the processes), a key file
// that is not there, a shared-memory size out of range.
TEST(HostileInput, ZmqSettingsAreRefusedBeforeAnyDataIsRead) {
#ifndef FAST_TEST_ZMQ
  GTEST_SKIP() << "this build has no zmq runtime";
#endif
  const std::string alone = "env -u FAST_RENDEZVOUS -u FAST_WORLD_SIZE -u FAST_PROCESS_RANK ";
  const std::string met = alone + "FAST_RENDEZVOUS=127.0.0.1:9 FAST_WORLD_SIZE=1 ";
  for (const Case& c : std::vector<Case>{
           {alone,
            "train --runtime zmq --steps 3",
            {"rendezvous: expected HOST:PORT", "got nothing", "fast launch -n N -- COMMAND", "--world-size N"}},
           {met,
            "train --runtime zmq --steps 3 --key /nonexistent.key --allow /nonexistent.allow",
            {"key file '/nonexistent.key'"}},
           {met + "FAST_SHM_BYTES=5 ", "train --runtime zmq --steps 3 --insecure", {"FAST_SHM_BYTES", "got 5"}},
       })
    expect_refused(c);
}

}  // namespace
