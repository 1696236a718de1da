#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/env_checks.hpp"
#include "common/error_message.hpp"
#include "common/test_dir.hpp"
#include "config.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/launcher.hpp"
#include "key_builders.hpp"

namespace fast::settings {
namespace {

std::filesystem::path write_toml(const std::string& name, const std::string& body) {
  const auto path = fast::testing::test_dir("fast_config_test", "files") / name;
  std::ofstream(path) << body;
  return path;
}

std::string error_of(const std::function<void()>& fn) { return fast::testing::error_message<core::Error>(fn); }

// The settings the processes of a run must share: every key but those each process has its own
// (declared per_process: its output files, its rank and keys, its time limits), as text.
TEST(SharedSettings, HoldEveryKeyButThePerProcessOnesAsText) {
  training::TrainOptions o;
  o.batch = 32;
  o.metrics = "m.rank0.jsonl";
  const nlohmann::json shared = nlohmann::json::parse(shared_settings(o));
  EXPECT_EQ(shared.at("batch"), "32");
  EXPECT_EQ(shared.at("strategy"), "allreduce");
  for (const ConfigKey& key : config_keys()) EXPECT_EQ(shared.contains(key.name), !key.per_process) << key.name;
  for (const char* own : {"metrics", "summary", "checkpoint_dir", "rendezvous", "process_rank", "key", "op_timeout"})
    EXPECT_FALSE(shared.contains(own)) << own;
  training::TrainOptions other = o;
  other.metrics = "m.rank1.jsonl";  // a per-process setting changes nothing
  EXPECT_EQ(shared_settings(other), shared_settings(o));
  other.worker.optimizer.lr = 0.1;
  EXPECT_NE(shared_settings(other), shared_settings(o));
}

// settings_difference names the first setting, by name, whose values differ, with both values and
// whose they are; "" when they agree or either side has none (a process that checks nothing).
TEST(SharedSettings, TheFirstDifferenceIsNamedWithBothValues) {
  const std::string a = R"({"batch": "64", "lr": "0.05", "steps": "300"})";
  const std::string b = R"({"batch": "64", "lr": "0.1", "steps": "320"})";
  EXPECT_EQ(runtime::settings_difference(a, "rank 1", a, "rank 0"), "");
  EXPECT_EQ(runtime::settings_difference(a, "rank 1", "", "rank 0"), "");
  EXPECT_EQ(runtime::settings_difference("", "rank 1", b, "rank 0"), "");
  EXPECT_EQ(runtime::settings_difference(b, "rank 1", a, "rank 0"), "lr = 0.1 in rank 1, 0.05 in rank 0");
  EXPECT_EQ(runtime::settings_difference(R"({"batch": "64"})", "that process", a, "the run"),
            "lr = (none) in that process, 0.05 in the run");
  EXPECT_EQ(runtime::settings_difference("[1]", "that process", a, "the run"),
            "the settings of that process cannot be read");
}

TEST(Config, FileThenFlagsOverride) {
  training::TrainOptions o;
  apply_config_file(o, write_toml("ok.toml",
                                  "workers = 3\nmodel = \"cnn\"\nlr = 1\nbatch = 16\ndata-dir = \"/x\"\n"
                                  "optimizer = \"adam\"\nnon_finite = \"error\"\n"));
  EXPECT_EQ(o.workers, 3);
  EXPECT_EQ(o.model, "cnn");
  EXPECT_DOUBLE_EQ(o.worker.optimizer.lr, 1.0);  // an integer is a valid number
  EXPECT_EQ(o.batch, 16);
  EXPECT_EQ(o.data_dir, "/x");
  EXPECT_EQ(o.worker.optimizer.name, "adam");
  EXPECT_EQ(o.worker.strategy.non_finite, strategy::NonFinitePolicy::error);
  apply_setting(o, "workers", "5", "--workers");
  EXPECT_EQ(o.workers, 5);
}

TEST(Config, SlowdownFactorsParseAndAreChecked) {
  training::TrainOptions o;
  apply_setting(o, "slowdown", "1,1,1.5,4", "--slowdown");
  EXPECT_EQ(o.slowdown.factors, (std::vector<double>{1, 1, 1.5, 4}));
  apply_setting(o, "straggler_probability", "0.1", "--straggler-probability");
  EXPECT_DOUBLE_EQ(o.slowdown.straggler_probability, 0.1);
  EXPECT_NE(
      error_of([&] { apply_setting(o, "slowdown", "1,0.5", "--slowdown"); }).find("expected factors >= 1, got 0.5"),
      std::string::npos);
  EXPECT_NE(error_of([&] { apply_setting(o, "slowdown", "1,x", "--slowdown"); }).find("expected a number, got 'x'"),
            std::string::npos);
  apply_setting(o, "slowdown", "", "--slowdown");
  EXPECT_TRUE(o.slowdown.factors.empty());
}

// momentum = 0 is PyTorch's SGD default: accepted (optimizer sgd ignores it); 1 and below 0 are
// refused by the declared range. epochs and steps declare their upper bounds (the step counter's).
TEST(Config, MomentumZeroIsAcceptedAndTheCountsDeclareTheirBounds) {
  training::TrainOptions o;
  apply_setting(o, "optimizer", "sgd", "--optimizer");
  apply_setting(o, "momentum", "0", "--momentum");
  EXPECT_EQ(o.worker.optimizer.momentum, 0.0);
  EXPECT_NE(error_of([&] { apply_setting(o, "momentum", "1", "--momentum"); }).find("momentum"), std::string::npos);
  EXPECT_NE(error_of([&] { apply_setting(o, "momentum", "-0.1", "--momentum"); }).find("momentum"), std::string::npos);
  apply_setting(o, "epochs", "1000000", "--epochs");
  EXPECT_EQ(o.epochs, 1'000'000);
  EXPECT_NE(error_of([&] { apply_setting(o, "epochs", "1000001", "--epochs"); }).find("1000000"), std::string::npos);
  apply_setting(o, "steps", "1000000000000", "--steps");
  EXPECT_EQ(o.steps, training::kMaxSteps);
  EXPECT_NE(error_of([&] { apply_setting(o, "steps", "1000000000001", "--steps"); }).find("steps"),
            std::string::npos);
}

TEST(Config, WrongTypeNamesFileLineKeyAndTypes) {
  training::TrainOptions o;
  const std::string e = error_of([&] { apply_config_file(o, write_toml("t.toml", "seed = 1\nbatch = \"large\"\n")); });
  EXPECT_NE(e.find("t.toml' line 2"), std::string::npos) << e;
  EXPECT_NE(e.find("key 'batch' expects integer, got a string"), std::string::npos) << e;
}

TEST(Config, UnknownKeyListsKnownKeys) {
  training::TrainOptions o;
  const std::string e = error_of([&] { apply_config_file(o, write_toml("u.toml", "wokers = 2\n")); });
  EXPECT_NE(e.find("unknown key 'wokers' (did you mean 'workers'?); expected one of: "), std::string::npos) << e;
  // The flag's spelling of a key is suggested as the key.
  const std::string flag = error_of([&] { apply_config_file(o, write_toml("f.toml", "peer-timeot = 2\n")); });
  EXPECT_NE(flag.find("unknown key 'peer-timeot' (did you mean 'peer_timeout'?)"), std::string::npos) << flag;
}

// The keys a file set come back sorted, '-' spelled '_'; the strategy options among keys
// that the chosen strategy does not declare are named, with the strategies that do.
TEST(Config, OptionsTheStrategyDoesNotReadAreNamed) {
  training::TrainOptions o;
  const std::vector<std::string> keys = apply_config_file(
      o, write_toml("given.toml", "strategy = \"allreduce\"\nlr-staleness = \"inverse\"\nseed = 3\n"));
  EXPECT_EQ(keys, (std::vector<std::string>{"lr_staleness", "seed", "strategy"}));
  EXPECT_EQ(
      unread_strategy_options("allreduce", {"mode", "seed", "compress", "topology", "sparse-allreduce"}),
      (std::vector<std::string>{"mode: an option of ps; allreduce does not read it",
                                "topology: an option of dpsgd, adpsgd, gosgd, acid; allreduce does not read it"}));
  EXPECT_TRUE(unread_strategy_options("ps", {"mode", "lr_staleness", "dgc", "compress", "workers"}).empty());
  EXPECT_EQ(unread_strategy_options("dpsgd", {"period"}),
            (std::vector<std::string>{"period: an option of local-sgd; dpsgd does not read it"}));
}

// A setting the strategy reads but another setting turns off is named with that setting, and
// only when it was given; once the other setting turns it on, the warning goes.
TEST(Config, OptionsAnotherSettingTurnsOffAreNamed) {
  training::TrainOptions o;
  apply_setting(o, "strategy", "allreduce", "--strategy");
  apply_setting(o, "dgc_masking", "on", "--dgc-masking");
  apply_setting(o, "dgc_clip", "2", "--dgc-clip");
  apply_setting(o, "sparse_allreduce", "gather", "--sparse-allreduce");
  apply_setting(o, "dataset", "synthetic:train=64,test=8", "--dataset");
  apply_setting(o, "data_dir", "/nonexistent", "--data-dir");
  const std::vector<std::string> given{"strategy", "dgc-masking", "dgc_clip", "sparse_allreduce", "data_dir"};
  EXPECT_EQ(inert_settings(o, given),
            (std::vector<std::string>{"data_dir: changes nothing with dataset = 'synthetic:train=64,test=8'",
                                      "sparse_allreduce: changes nothing with compress = 'none'",
                                      "dgc_clip: changes nothing with dgc = false",
                                      "dgc_masking: changes nothing with dgc = false"}));
  // An element-wise codec is reduced on the ring, not gathered: sparse_allreduce still does nothing.
  apply_setting(o, "compress", "fp16", "--compress");
  EXPECT_EQ(inert_settings(o, {"sparse_allreduce"}),
            (std::vector<std::string>{"sparse_allreduce: changes nothing with compress = 'fp16'"}));
  // Turned on by the settings they depend on.
  apply_setting(o, "compress", "topk:ratio=0.01", "--compress");
  apply_setting(o, "dgc", "true", "--dgc");
  apply_setting(o, "dataset", "fashion-mnist", "--dataset");
  EXPECT_TRUE(inert_settings(o, given).empty());
  // dgc_warmup_ratio: off without a sparsity warm-up, on with one.
  apply_setting(o, "dgc_warmup_ratio", "0.5", "--dgc-warmup-ratio");
  EXPECT_EQ(inert_settings(o, {"dgc_warmup_ratio"}),
            (std::vector<std::string>{"dgc_warmup_ratio: changes nothing with dgc_warmup_steps = 0 (fast train: "
                                      "dgc_warmup_epochs = 0), no sparsity warm-up"}));
  apply_setting(o, "dgc_warmup_epochs", "0.5", "--dgc-warmup-epochs");
  EXPECT_TRUE(inert_settings(o, {"dgc_warmup_ratio"}).empty());
  // consensus_step: allreduce does not read it (unread_strategy_options names it); dpsgd reads it
  // with a lossy codec only.
  apply_setting(o, "consensus_step", "0.5", "--consensus-step");
  EXPECT_TRUE(inert_settings(o, {"consensus_step"}).empty());
  apply_setting(o, "strategy", "dpsgd", "--strategy");
  EXPECT_TRUE(inert_settings(o, {"consensus_step"}).empty());
  apply_setting(o, "compress", "none", "--compress");
  EXPECT_EQ(inert_settings(o, {"consensus-step"}),
            (std::vector<std::string>{"consensus_step: changes nothing with compress = 'none'"}));
  // An optimizer option the chosen optimizer does not read (optim::optimizer_reads).
  training::TrainOptions m;
  apply_setting(m, "optimizer", "momentum", "--optimizer");
  apply_setting(m, "beta1", "0.5", "--beta1");
  apply_setting(m, "momentum", "0.5", "--momentum");
  EXPECT_EQ(inert_settings(m, {"optimizer", "beta1", "momentum"}),
            (std::vector<std::string>{"beta1: changes nothing with optimizer = momentum"}));
  apply_setting(m, "optimizer", "adam", "--optimizer");
  EXPECT_EQ(inert_settings(m, {"optimizer", "beta1", "momentum"}),
            (std::vector<std::string>{"momentum: changes nothing with optimizer = adam"}));
  // momentum = 0 says "no momentum", as PyTorch's SGD(momentum=0) does: no warning under sgd.
  apply_setting(m, "optimizer", "sgd", "--optimizer");
  EXPECT_EQ(inert_settings(m, {"optimizer", "momentum"}),
            (std::vector<std::string>{"momentum: changes nothing with optimizer = sgd"}));
  apply_setting(m, "momentum", "0", "--momentum");
  EXPECT_TRUE(inert_settings(m, {"optimizer", "momentum"}).empty());
  // ps: the asynchronous modes' options under mode sync, staleness outside mode ssp.
  apply_setting(o, "strategy", "ps", "--strategy");
  const std::vector<std::string> ps_given{"lr_staleness", "lr_semantics", "staleness", "mode"};
  EXPECT_EQ(inert_settings(o, ps_given),  // the default mode, async
            (std::vector<std::string>{"staleness: changes nothing with mode = 'async'"}));
  apply_setting(o, "mode", "sync", "--mode");
  EXPECT_EQ(inert_settings(o, ps_given), (std::vector<std::string>{"lr_semantics: changes nothing with mode = 'sync'",
                                                                   "lr_staleness: changes nothing with mode = 'sync'",
                                                                   "staleness: changes nothing with mode = 'sync'"}));
  apply_setting(o, "mode", "ssp", "--mode");
  EXPECT_TRUE(inert_settings(o, ps_given).empty());
}

// The network that allreduce_algorithm = auto assumes serves its choice only: a fixed algorithm
// turns both settings off.
TEST(Config, TheAssumedNetworkChangesNothingWithAFixedAlgorithm) {
  training::TrainOptions o;
  apply_setting(o, "network_latency", "1e-3", "--network-latency");
  apply_setting(o, "network_bandwidth", "1e9", "--network-bandwidth");
  const std::vector<std::string> given{"network_latency", "network_bandwidth"};
  EXPECT_TRUE(inert_settings(o, given).empty());  // auto, the default
  apply_setting(o, "allreduce_algorithm", "ring", "--allreduce-algorithm");
  EXPECT_EQ(inert_settings(o, given),
            (std::vector<std::string>{"network_latency: changes nothing with allreduce_algorithm = ring",
                                      "network_bandwidth: changes nothing with allreduce_algorithm = ring"}));
}

// The settings of how processes find and reach each other are read by the runtime that joins them
// by FAST's rendezvous (zmq) only: under threads (one process) they change nothing.
TEST(Config, ProcessSettingsChangeNothingUnderARuntimeWithoutRendezvous) {
  training::TrainOptions o;
  apply_setting(o, "insecure", "true", "--insecure");
  apply_setting(o, "peer_timeout", "3", "--peer-timeout");
  apply_setting(o, "world_size", "2", "--world-size");
  const std::vector<std::string> given{"insecure", "peer_timeout", "world_size", "workers_per_process"};
  o.runtime = "threads";
  EXPECT_EQ(inert_settings(o, given),
            (std::vector<std::string>{"world_size: changes nothing with runtime = threads",
                                      "workers_per_process: changes nothing with runtime = threads",
                                      "insecure: changes nothing with runtime = threads",
                                      "peer_timeout: changes nothing with runtime = threads"}));
  const auto names = runtime::runtime_names();
  if (std::find(names.begin(), names.end(), "zmq") != names.end()) {
    o.runtime = "zmq";
    EXPECT_TRUE(inert_settings(o, given).empty());
  }
}

// Specs read as text are checked as they are read, so that the error names the flag (or the config
// file's line and key), not only the setting.
TEST(Config, SpecsAreCheckedWhereTheyAreGiven) {
  training::TrainOptions o;
  const std::pair<const char*, const char*> cases[] = {
      {"device", "--device: expected cpu, cuda or cuda:K (K a GPU index >= 0), got 'gpu'"},
      {"aggregate", "--aggregate: aggregate spec 'gpu': unknown name 'gpu'"},
      {"fault_inject", "--fault-inject: fault_inject 'gpu': expected KIND@W1,W2,..."},
      {"dataset", "--dataset: dataset spec 'gpu': unknown name 'gpu'"},
  };
  for (const auto& [key, message] : cases) {
    const std::string flag = "--" + std::string(key == std::string("fault_inject") ? "fault-inject" : key);
    const std::string e = error_of([&] { apply_setting(o, key, "gpu", flag); });
    EXPECT_NE(e.find(message), std::string::npos) << e;
  }
  // A worker rank is checked against the world once it is known, not here.
  apply_setting(o, "fault_inject", "nan@1000", "--fault-inject");
  EXPECT_EQ(o.worker.strategy.fault_inject, "nan@1000");
}

TEST(Config, UnknownStrategyAndOptimizerListAllowedNames) {
  training::TrainOptions o;
  std::string e = error_of([&] { apply_setting(o, "strategy", "telepathy", "--strategy"); });
  EXPECT_NE(e.find("unknown value 'telepathy'; expected one of: allreduce"), std::string::npos) << e;
  e = error_of([&] { apply_setting(o, "optimizer", "lbfgs", "--optimizer"); });
  EXPECT_NE(e.find("expected one of: sgd, momentum, nesterov, adam, adamw"), std::string::npos) << e;
  // A strategy option's choice (core::Setting) gets the nearest value too.
  e = error_of([&] { apply_setting(o, "mode", "asyncc", "--mode"); });
  EXPECT_NE(e.find("mode: unknown value 'asyncc' (did you mean 'async'?); expected one of: sync, async, ssp"),
            std::string::npos)
      << e;
}

TEST(Config, OutOfRangeAndMalformedValuesAreRejected) {
  training::TrainOptions o;
  EXPECT_NE(error_of([&] {
              apply_setting(o, "workers", "0", "--workers");
            }).find("expected an integer in [1, 2147483647], got 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_setting(o, "lr", "-0.1", "--lr");
            }).find("expected a positive number, finite as a 32-bit float, got -0.1"),
            std::string::npos);
  // Decimal numbers only; a value that is 0 as the 32-bit float the optimizer uses is below lr's minimum.
  EXPECT_NE(error_of([&] { apply_setting(o, "lr", "0x10", "--lr"); }).find("--lr: expected a number, got '0x10'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_setting(o, "lr", "1e-50", "--lr");
            }).find("expected a positive number, finite as a 32-bit float, got 1e-50 (0 as a 32-bit float)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { apply_setting(o, "lr", "1e-999", "--lr"); }).find("beyond a double's range"),
            std::string::npos);
  apply_setting(o, "lr", "1e-30", "--lr");  // a float32 (subnormal ones too) above 0 is taken
  EXPECT_EQ(o.worker.optimizer.lr, 1e-30);
  // Ranges the optimizer and schedule need, refused by the setting (before any data is read).
  EXPECT_NE(error_of([&] {
              apply_setting(o, "min_lr_factor", "2", "--min-lr-factor");
            }).find("--min-lr-factor: expected a number in [0, 1], got 2"),
            std::string::npos);
  EXPECT_NE(error_of([&] { apply_setting(o, "beta2", "1", "--beta2"); }).find("--beta2: expected a number in [0, 1)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { apply_setting(o, "batch", "12abc", "--batch"); }).find("expected an integer, got '12abc'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { apply_setting(o, "colour", "red", "--colour"); }).find("unknown setting 'colour'"),
            std::string::npos);
}

TEST(Config, SyntaxErrorNamesLineAndColumn) {
  training::TrainOptions o;
  const std::string e = error_of([&] { apply_config_file(o, write_toml("s.toml", "workers = 2\nmodel = \n")); });
  EXPECT_NE(e.find("s.toml' line 2"), std::string::npos) << e;
}

// A topology or schedule spec's syntax is checked where it is set: its error names the file, the
// line and the key (or the flag), as a codec spec's does.
TEST(Config, ABadTopologySpecNamesTheFileLineAndKey) {
  training::TrainOptions o;
  const std::string e =
      error_of([&] { apply_config_file(o, write_toml("topo.toml", "workers = 2\ntopology = \"moebius\"\n")); });
  EXPECT_NE(e.find("topo.toml' line 2: key 'topology': topology spec 'moebius': unknown name"), std::string::npos) << e;
  const std::string flag = error_of([&] { apply_setting(o, "topology", "star:-1", "--topology"); });
  EXPECT_NE(flag.find("--topology: topology spec 'star:-1': CENTER (value 1 of star[:CENTER])"), std::string::npos)
      << flag;
  apply_setting(o, "topology", "exponential-peer", "--topology");  // a schedule (gosgd's) parses too
  EXPECT_EQ(o.worker.strategy.topology, "exponential-peer");
}

TEST(Config, MissingFileIsIoError) {
  training::TrainOptions o;
  EXPECT_THROW(apply_config_file(o, "/nonexistent/fast.toml"), core::IoError);
}

TEST(Config, ProcessSettingsOfTheZmqRuntimeFillProcessOptions) {
  training::TrainOptions o;
  apply_config_file(
      o, write_toml("zmq.toml",
                    "rendezvous = \"10.0.0.1:29500\"\nworld_size = 4\nprocess_rank = 2\n"
                    "workers_per_process = 3\nkey = \"k.key\"\nallow = \"allow.txt\"\ninsecure = true\n"
                    "peer_timeout = 5\nrendezvous_timeout = 60\ntransport = \"tcp\"\nhost = \"10.0.0.2\"\n"));
  EXPECT_EQ(o.process.rendezvous, "10.0.0.1:29500");
  EXPECT_EQ(o.process.world_size, 4);
  EXPECT_EQ(o.process.process_rank, 2);
  EXPECT_EQ(o.process.workers_per_process, 3);
  EXPECT_EQ(o.process.key_file, "k.key");
  EXPECT_EQ(o.process.allow_file, "allow.txt");
  EXPECT_TRUE(o.process.insecure);
  EXPECT_DOUBLE_EQ(o.process.peer_timeout_seconds, 5.0);
  EXPECT_DOUBLE_EQ(o.process.rendezvous_timeout_seconds, 60.0);
  EXPECT_EQ(o.process.transport, "tcp");
  EXPECT_EQ(o.process.host, "10.0.0.2");
  apply_setting(o, "insecure", "false", "--insecure");
  EXPECT_FALSE(o.process.insecure);
  // Defaults name the environment variable the runtime falls back to.
  const training::TrainOptions defaults;
  EXPECT_EQ(find_config_key("world-size")->get(defaults), "$FAST_WORLD_SIZE");
  EXPECT_EQ(find_config_key("transport")->get(defaults), "$FAST_TRANSPORT");
  EXPECT_EQ(find_config_key("insecure")->type, KeyType::boolean);
}

TEST(Config, ProcessSettingsOutOfRangeOrOfTheWrongTypeAreRejected) {
  training::TrainOptions o;
  EXPECT_NE(error_of([&] { apply_setting(o, "transport", "udp", "--transport"); }).find("ipc, tcp"), std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_setting(o, "workers_per_process", "0", "--workers-per-process");
            }).find("in [1, 2147483647], got 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { apply_setting(o, "world_size", "0", "--world-size"); }).find("in [1, 2147483647], got 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { apply_setting(o, "insecure", "yes", "--insecure"); }).find("true or false"),
            std::string::npos);
  const std::string wrong = error_of([&] { apply_config_file(o, write_toml("bool.toml", "insecure = \"yes\"\n")); });
  EXPECT_NE(wrong.find("boolean"), std::string::npos) << wrong;
}

TEST(Config, MarkdownDocumentsEveryKeyWithItsFlag) {
  const std::string md = config_markdown();
  for (const ConfigKey& k : config_keys()) {
    EXPECT_NE(md.find(fmt::format("`{}`", k.name)), std::string::npos) << k.name;
    EXPECT_NE(md.find(flag_name(k.name)), std::string::npos) << k.name;
  }
  EXPECT_EQ(flag_name("data_dir"), "--data-dir");
  EXPECT_NE(md.find("FAST_DATA_DIR"), std::string::npos);
}

// Every general key states what it accepts in its own declaration (docs/config.md's "accepts"
// column): a string, a path and a boolean key, whose text is not generated from a range.
TEST(Config, EveryGeneralKeyStatesWhatItAccepts) {
  const std::vector<ConfigKey> keys = detail::general_keys();
  ASSERT_FALSE(keys.empty());
  for (const ConfigKey& k : keys) EXPECT_FALSE(k.accepts.empty()) << k.name;
  EXPECT_EQ(find_config_key("device")->accepts, "cpu, cuda or cuda:K");
  EXPECT_EQ(find_config_key("data_dir")->accepts, "a folder");
  EXPECT_EQ(find_config_key("elastic")->accepts, "true or false");
  EXPECT_EQ(find_config_key("transport")->accepts, "one of: ipc, tcp; or empty");
}

// A general key declared without an `accepts` text fails the table's check, naming the key.
TEST(Config, AGeneralKeyWithoutAcceptsTextIsRefusedNamingIt) {
  std::vector<ConfigKey> keys = detail::general_keys();
  EXPECT_NO_THROW(detail::require_accepts(keys));
  keys.push_back(detail::text_key(
      "undocumented", KeyType::string, "", "A key that does not say what it accepts.",
      [](training::TrainOptions&, const std::string&) {}, [](const training::TrainOptions&) { return std::string(); }));
  const std::string error = fast::testing::error_message<core::InvalidUsage>([&] { detail::require_accepts(keys); });
  EXPECT_NE(error.find("setting 'undocumented' has no 'accepts' text"), std::string::npos) << error;
}

// Generated from the table: every integer setting, given a value its field cannot hold or a value
// that is not an integer, is refused with an error naming the key; a value it accepts reads back
// unchanged (nothing wraps: 2^32 + 3 workers are not 3 workers).
TEST(Config, EveryIntegerSettingRefusesWhatItCannotHoldAndNeverWraps) {
  const std::vector<std::string> values = {"4294967299",
                                           "4294967296",
                                           "2147483648",
                                           "9223372036854775807",
                                           "9223372036854775808",
                                           "18446744073709551616",
                                           "-1",
                                           "-4294967295",
                                           "1.5",
                                           "1e3"};
  int integer_keys = 0;
  for (const ConfigKey& k : config_keys()) {
    if (k.type != KeyType::integer) continue;
    ++integer_keys;
    for (const std::string& v : values) {
      training::TrainOptions o;
      std::string error;
      try {
        apply_setting(o, k.name, v, flag_name(k.name));
      } catch (const core::Error& e) {
        error = e.what();
      }
      if (error.empty())
        EXPECT_EQ(k.get(o), v) << k.name << " took " << v << " and holds " << k.get(o);
      else
        EXPECT_NE(error.find(flag_name(k.name)), std::string::npos) << k.name << ": " << error;
    }
  }
  EXPECT_GT(integer_keys, 10);
}

// Generated from the declarations: every integer and number setting (general or a strategy's
// option), given a value just outside its declared range on either side, is refused with an error
// that names the flag, the range as the docs say it (the declaration's `accepts`) and the value as
// given.
TEST(Config, EveryDeclaredRangeRefusesAValueOutsideItNamingKeyRangeAndValue) {
  int checked = 0;
  for (const ConfigKey& k : config_keys()) {
    if (k.type != KeyType::integer && k.type != KeyType::number) continue;
    ASSERT_TRUE(k.declaration.has_value()) << k.name << " has no declared range";
    const core::Setting& d = *k.declaration;
    EXPECT_EQ(k.accepts, d.expected()) << k.name;
    const bool integer = k.type == KeyType::integer;
    // Below the range and above it; one step further out where that is the sentinel accepted
    // outside the range.
    std::vector<double> outside;
    if (std::isfinite(d.minimum())) {
      const double below = d.minimum_excluded() ? d.minimum() : d.minimum() - 1;
      outside.push_back(d.sentinel() == below ? below - 1 : below);
    }
    if (std::isfinite(d.maximum())) {
      const double above = d.maximum_excluded() ? d.maximum() : (integer ? d.maximum() + 1 : d.maximum() * 2 + 1);
      outside.push_back(d.sentinel() == above ? above + 1 : above);
    }
    for (const double v : outside) {
      const std::string given = integer ? fmt::format("{}", static_cast<long long>(v)) : fmt::format("{}", v);
      training::TrainOptions o;
      std::string error;
      try {
        apply_setting(o, k.name, given, flag_name(k.name));
      } catch (const core::InvalidArgument& e) {
        error = e.what();
      }
      ++checked;
      EXPECT_NE(error.find(flag_name(k.name)), std::string::npos) << k.name << " = " << given << ": " << error;
      EXPECT_NE(error.find(k.accepts), std::string::npos) << k.name << " = " << given << ": " << error;
      EXPECT_NE(error.find("got " + given), std::string::npos) << k.name << " = " << given << ": " << error;
    }
  }
  EXPECT_GT(checked, 40);
}

// Every layer's environment variables (core, the runtime layer, each backend of this build, the
// training layer): each described, each name declared once, and every integer one refusing
// values outside its declared range (tests/common/env_checks.hpp).
TEST(Config, EveryLayersEnvironmentVariablesAreDeclaredOnceAndChecked) {
  std::set<std::string_view> names;
  int integers = 0;
  for (const core::EnvTable table : environment_tables()) {
    core::check_described(table);
    for (const core::EnvVar& v : table) EXPECT_TRUE(names.insert(v.name).second) << v.name << " declared twice";
    integers += core::check_integer_variables(table);
  }
  EXPECT_GE(integers, 1);  // FAST_TORCH_THREADS in every build; zmq's too where it is built
  const std::string md = config_markdown();
  for (const std::string_view name : names) EXPECT_NE(md.find(fmt::format("`{}`", name)), std::string::npos) << name;
}

// Generated from the table: every integer and number setting that refuses a value spelled in a way
// of its own ("-01", "-1.50e+00") names that value as given, not a reformatted one ("-1", "-1.5").
TEST(Config, EveryNumericSettingEchoesTheRefusedValueAsGiven) {
  const std::vector<std::string> integers = {"-0001", "00", "-09223372036854775807", "0004294967299"};
  const std::vector<std::string> numbers = {"-0001", "-1.50e+00", "0.0", "1.0e+40", "-0", "9.90e+08"};
  int refusals = 0;
  for (const ConfigKey& k : config_keys()) {
    if (k.type != KeyType::integer && k.type != KeyType::number) continue;
    for (const std::string& v : k.type == KeyType::integer ? integers : numbers) {
      training::TrainOptions o;
      try {
        apply_setting(o, k.name, v, flag_name(k.name));
      } catch (const core::Error& e) {
        ++refusals;
        const std::string error = e.what();
        EXPECT_NE(error.find("got " + v), std::string::npos) << k.name << " = " << v << ": " << error;
      }
    }
  }
  EXPECT_GT(refusals, 30);
}

}  // namespace
}  // namespace fast::settings
