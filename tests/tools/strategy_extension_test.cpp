// Strategies defined outside the library — here, in this test — registered by name, configured
// from a config file and trained through the path `fast train` takes (apply_config_file, then
// torch::train). docs/architecture.md, "Adding a strategy".
//
// scaled-sgd, synchronous, has one option of its own: gradient averaging whose averaged gradient
// is multiplied by gradient_scale before the update. With plain SGD and gradient_scale = 2, every
// update is p - lr * (2 g) = p - (2 lr) * g exactly (doubling a float is exact), so training it
// with lr = 0.05 must give the same parameters, bit for bit, as the built-in allreduce with lr = 0.1.
//
// solo-sgd is asynchronous (its registration says so: `.asynchronous = true`): each worker applies
// its own gradient and never waits for another; it takes a lost worker back from a live peer's
// published replica. The Worker publishes its replicas, the training loop shares a batch budget
// and refuses checkpoints every N steps, as for the built-in asynchronous strategies.

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error_message.hpp"
#include "common/test_dir.hpp"
#include "config.hpp"
#include "fast/adapters/torch/trainer.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/threads/world.hpp"
#include "fast/strategy/registry.hpp"
#include "fast/strategy/worker.hpp"

namespace fast {
namespace {

// The gradient_scale of every scaled-sgd strategy built, in construction order.
std::mutex seen_mutex;
std::vector<double> seen_scales;

class ScaledSgd final : public strategy::Strategy {
 public:
  ScaledSgd(const strategy::StrategyOptions& options, collective::Communicator& comm)
      : Strategy(comm), options_(options), scale_(options.get_number("gradient_scale")) {
    const std::lock_guard lock(seen_mutex);
    seen_scales.push_back(scale_);
  }
  std::string_view name() const override { return "scaled-sgd"; }
  strategy::StepOutcome step(const strategy::StepInput& input) override {
    const double t0 = comm_.context().now();
    comm_.allreduce(core::MutableView(input.state.grads),
                    {.op = collective::ReduceOp::avg, .chunk_bytes = options_.chunk_bytes});
    for (float& g : input.state.grads) g = static_cast<float>(g * scale_);
    strategy::StepOutcome outcome{.comm_seconds = comm_.context().now() - t0};
    outcome.applied = apply_update(input, options_.non_finite);
    return outcome;
  }
  // Every replica applied the same update: the representative is this one (as allreduce's).
  void representative(strategy::ModelState state, std::span<float> out) override {
    std::copy(state.params.begin(), state.params.end(), out.begin());
  }
  bool replicas_identical() const override { return true; }

 private:
  strategy::StrategyOptions options_;
  double scale_;
};

// Asynchronous: every worker applies its own gradient, with no communication at all.
class SoloSgd final : public strategy::Strategy {
 public:
  SoloSgd(const strategy::StrategyOptions& options, collective::Communicator& comm)
      : Strategy(comm), options_(options) {}
  std::string_view name() const override { return "solo-sgd"; }
  bool asynchronous() const override { return true; }
  strategy::StepOutcome step(const strategy::StepInput& input) override {
    return {.applied = apply_update(input, options_.non_finite)};
  }
  // The Worker copied the lowest live peer's published replica into the parameters: nothing more.
  void rejoin(strategy::ModelState /*state*/) override {}
  bool rejoins_from_published_replica() const override { return true; }

 private:
  strategy::StrategyOptions options_;
};

// SoloSgd registered without its trait: its Worker must refuse it.
class UndeclaredAsync final : public strategy::Strategy {
 public:
  UndeclaredAsync(const strategy::StrategyOptions& /*options*/, collective::Communicator& comm) : Strategy(comm) {}
  std::string_view name() const override { return "undeclared-async"; }
  bool asynchronous() const override { return true; }
  strategy::StepOutcome step(const strategy::StepInput& /*input*/) override { return {}; }
};

void register_solo_sgd() {
  static std::once_flag once;
  std::call_once(once, [] {
    strategy::register_strategy({.name = "solo-sgd",
                                 .summary = "every worker trains alone, asynchronously",
                                 .make = strategy::factory_of<SoloSgd>(),
                                 .asynchronous = true,
                                 .rejoin = [](const strategy::StrategyOptions&, int) { return std::string(); }});
    strategy::register_strategy({.name = "undeclared-async",
                                 .summary = "asynchronous, but its registration does not say so",
                                 .make = strategy::factory_of<UndeclaredAsync>()});
  });
}

// Registered once per process, before any config is read (as a program would at start-up).
void register_scaled_sgd() {
  static std::once_flag once;
  std::call_once(once, [] {
    strategy::register_strategy(
        {.name = "scaled-sgd",
         .summary = "allreduce with a scaled averaged gradient",
         .make = strategy::factory_of<ScaledSgd>(),
         .options = {strategy::StrategyOption::number("gradient_scale", 1.0,
                                                      "factor of the averaged gradient before the update.")
                         .greater_than(0)
                         .at_most(16)}});
  });
}

std::filesystem::path write_config(const std::string& name, const std::string& body) {
  const auto path = fast::testing::test_dir("fast_extension_test", "files") / name;
  std::ofstream(path) << body;
  return path;
}

// Two workers, 30 steps of plain SGD on the MLP: a few seconds.
const std::string kRun = "workers = 2\nmodel = \"mlp\"\nsteps = 30\nbatch = 16\noptimizer = \"sgd\"\nseed = 7\n";

nlohmann::json train_file(const std::filesystem::path& file) {
  training::TrainOptions options;
  settings::apply_config_file(options, file);
  return torch::train(options);
}

TEST(StrategyExtension, OptionFromAConfigFileReachesTheStrategyAndTrainsAsItsClosedForm) {
  register_scaled_sgd();
  const auto config =
      write_config("scaled.toml", kRun + "strategy = \"scaled-sgd\"\ngradient_scale = 2.0\nlr = 0.05\n");
  training::TrainOptions options;
  settings::apply_config_file(options, config);
  EXPECT_EQ(options.worker.strategy.name, "scaled-sgd");
  EXPECT_EQ(options.worker.strategy.get_number("gradient_scale"), 2.0);

  {
    const std::lock_guard lock(seen_mutex);
    seen_scales.clear();
  }
  const nlohmann::json scaled = torch::train(options);
  {
    const std::lock_guard lock(seen_mutex);
    EXPECT_EQ(seen_scales, (std::vector<double>{2.0, 2.0}));  // one strategy per worker, each saw the file's value
  }
  const nlohmann::json doubled_lr = train_file(write_config("allreduce_0.1.toml", kRun + "lr = 0.1\n"));
  const nlohmann::json same_lr = train_file(write_config("allreduce_0.05.toml", kRun + "lr = 0.05\n"));
  EXPECT_EQ(scaled["strategy"], "scaled-sgd");
  EXPECT_EQ(scaled["steps"], doubled_lr["steps"]);
  EXPECT_EQ(scaled["param_hash"], doubled_lr["param_hash"]) << scaled.dump() << "\n" << doubled_lr.dump();
  EXPECT_EQ(scaled["final_accuracy"], doubled_lr["final_accuracy"]);
  EXPECT_NE(scaled["param_hash"], same_lr["param_hash"]);  // the option changed the training
}

TEST(StrategyExtension, ItsOptionIsAKeyAFlagAndADocumentedSetting) {
  register_scaled_sgd();
  const settings::ConfigKey* key = settings::find_config_key("gradient-scale");
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(key->type, settings::KeyType::number);
  EXPECT_EQ(key->get(training::TrainOptions{}), "1");  // the declared default
  EXPECT_EQ(settings::flag_name(key->name), "--gradient-scale");
  const std::string doc = settings::config_markdown();
  EXPECT_NE(
      doc.find("| `gradient_scale` | `--gradient-scale` | number | `1` | a number in (0, 16] | scaled-sgd: factor"),
      std::string::npos)
      << doc;
  EXPECT_NE(doc.find("scaled-sgd (allreduce with a scaled averaged gradient)"), std::string::npos);  // strategy's help

  training::TrainOptions options;
  settings::apply_setting(options, "gradient_scale", "0.5", "--gradient-scale");
  EXPECT_EQ(options.worker.strategy.get_number("gradient_scale"), 0.5);
  settings::apply_setting(options, "strategy", "scaled-sgd", "--strategy");
  EXPECT_EQ(options.worker.strategy.name, "scaled-sgd");
}

TEST(StrategyExtension, BadValuesNameTheFileTheKeyAndWhatWasExpected) {
  register_scaled_sgd();
  training::TrainOptions options;
  const std::string range = testing::error_message<core::Error>([&] {
    settings::apply_config_file(options, write_config("range.toml", "strategy = \"scaled-sgd\"\ngradient_scale = 0\n"));
  });
  EXPECT_NE(range.find("range.toml' line 2: key 'gradient_scale': expected a number in (0, 16], got 0"),
            std::string::npos)
      << range;
  const std::string type = testing::error_message<core::Error>(
      [&] { settings::apply_config_file(options, write_config("type.toml", "gradient_scale = \"big\"\n")); });
  EXPECT_NE(type.find("type.toml' line 1: key 'gradient_scale' expects number, got a string"), std::string::npos)
      << type;
  const std::string flag = testing::error_message<core::Error>(
      [&] { settings::apply_setting(options, "gradient_scale", "17", "--gradient-scale"); });
  EXPECT_NE(flag.find("--gradient-scale: expected a number in (0, 16], got 17"), std::string::npos) << flag;
}

TEST(StrategyExtension, ConflictingRegistrationsAreRefusedAndChangeNothing) {
  register_scaled_sgd();
  const auto names_before = strategy::strategy_names();
  const auto refuse = [](strategy::StrategyRegistration r) {
    return testing::error_message<core::InvalidArgument>([&] { strategy::register_strategy(std::move(r)); });
  };
  const auto make = strategy::factory_of<ScaledSgd>();
  EXPECT_NE(refuse({.name = "scaled-sgd", .make = make}).find("strategy 'scaled-sgd' is already registered"),
            std::string::npos);
  EXPECT_NE(refuse({.name = "Bad Name", .make = make}).find("name 'Bad Name'"), std::string::npos);
  // The same option name with another declaration than scaled-sgd's.
  EXPECT_NE(refuse({.name = "other",
                    .make = make,
                    .options = {strategy::StrategyOption::integer("gradient_scale", 1, "another meaning.")}})
                .find("option 'gradient_scale' (an integer, default 1) differs from its declaration by scaled-sgd "
                      "(a number in (0, 16], default 1)"),
            std::string::npos);
  EXPECT_NE(
      refuse({.name = "other", .make = make, .options = {strategy::StrategyOption::string("compress", "none", "x")}})
          .find("option 'compress' is a common option"),
      std::string::npos);
  EXPECT_NE(refuse({.name = "other",
                    .make = make,
                    .options = {strategy::StrategyOption::number("rate", -1, "x").greater_than(0)}})
                .find("the default of option rate: expected a positive number, got -1"),
            std::string::npos);
  EXPECT_EQ(strategy::strategy_names(), names_before);
  EXPECT_FALSE(strategy::find_option("rate").has_value());
}

TEST(StrategyExtension, AnAsynchronousStrategyRunsUnderTheWorkerWithItsReplicasPublished) {
  register_solo_sgd();
  EXPECT_TRUE(strategy::asynchronous_strategy({.name = "solo-sgd"}));
  EXPECT_EQ(strategy::rejoin_refusal({.name = "solo-sgd"}), "");
  EXPECT_NE(strategy::rejoin_refusal({.name = "allreduce"}).find("gosgd, acid and solo-sgd"), std::string::npos);
  // Worker r's gradient is r + 1 everywhere: after 3 steps of plain SGD at lr 0.5 from 1, worker r
  // holds 1 - 1.5 (r + 1) (exact in float), and the snapshot is the mean of the published replicas.
  runtime::threads::World({.size = 2, .op_timeout_seconds = 60}).run([](runtime::Context& ctx) {
    std::vector<float> x(4, 1.0f), g(4, static_cast<float>(ctx.rank() + 1));
    strategy::Worker worker(ctx, {.strategy = {.name = "solo-sgd"}, .optimizer = {.name = "sgd", .lr = 0.5}},
                            {.params = x, .grads = g});
    EXPECT_TRUE(worker.strategy().asynchronous());
    for (int i = 0; i < 3; ++i) worker.step();
    EXPECT_EQ(x, std::vector<float>(4, 1.0f - 1.5f * static_cast<float>(ctx.rank() + 1)));
    worker.communicator().barrier();  // both published their third step
    std::vector<float> consensus(4);
    const strategy::SnapshotResult snapshot = worker.snapshot(consensus);
    EXPECT_EQ(consensus, std::vector<float>(4, -1.25f));  // (-0.5 + -2) / 2
    EXPECT_DOUBLE_EQ(snapshot.consensus_distance, 4 * 0.75 * 0.75);
    worker.communicator().barrier();  // both read before either finishes
    worker.finish();
    worker.representative(consensus);  // collective: the average of the final replicas
    EXPECT_EQ(consensus, std::vector<float>(4, -1.25f));
  });
}

TEST(StrategyExtension, AnAsynchronousStrategyWhoseRegistrationDisagreesIsRefusedByItsWorker) {
  register_solo_sgd();
  runtime::threads::World({.size = 1}).run([](runtime::Context& ctx) {
    std::vector<float> x(2), g(2);
    testing::expect_error<core::InvalidArgument>(
        [&] { strategy::Worker(ctx, {.strategy = {.name = "undeclared-async"}}, {.params = x, .grads = g}); },
        {"strategy 'undeclared-async' is asynchronous (Strategy::asynchronous())",
         "its registration declares it synchronous", "StrategyRegistration::asynchronous"});
  });
  EXPECT_NE(strategy::rejoin_refusal({.name = "undeclared-async"}).find("strategy 'undeclared-async' is synchronous"),
            std::string::npos);
}

TEST(StrategyExtension, AnAsynchronousStrategyTrainsFromAConfigFileOnASharedBudget) {
  register_solo_sgd();
  const auto config = write_config("solo.toml", kRun + "strategy = \"solo-sgd\"\nlr = 0.05\n");
  const nlohmann::json solo = train_file(config);
  EXPECT_EQ(solo["strategy"], "solo-sgd");
  // The budget of 2 x 30 batches is shared: the workers' steps add up to it, whatever their pace.
  std::int64_t steps = 0;
  for (const auto& s : solo["steps_per_worker"]) steps += s.get<std::int64_t>();
  EXPECT_EQ(steps, 60) << solo.dump();
  EXPECT_GT(solo["consensus_distance"].get<double>(), 0.0);  // the replicas went apart: nobody averaged
  EXPECT_GT(solo["final_accuracy"].get<double>(), 0.3) << solo.dump();
  // An asynchronous strategy that declares no save_during_run check writes no periodic checkpoints.
  training::TrainOptions options;
  settings::apply_config_file(options, config);
  options.checkpoint_dir = fast::testing::test_dir("fast_extension_test", "checkpoints");
  options.checkpoint_every = 5;
  testing::expect_error<core::InvalidArgument>(
      [&] { torch::validate_options(options); },
      {"checkpoint_every: set to 5 with the asynchronous strategy 'solo-sgd'"});
  // Nor can they keep their buffers in step after every step.
  options.checkpoint_every = 0;
  options.buffers = "broadcast";
  testing::expect_error<core::InvalidArgument>(
      [&] { torch::validate_options(options); },
      {"buffers = broadcast: a collective after every step, and strategy 'solo-sgd' is asynchronous"});
  options.buffers = "local";
  EXPECT_NO_THROW(torch::validate_options(options));
}

TEST(StrategyExtension, TraitsOnOptionsItDoesNotDeclareOrValuesTheyRefuseAreRefused) {
  register_solo_sgd();
  const auto refuse = [](strategy::StrategyRegistration r) {
    return testing::error_message<core::InvalidArgument>([&] { strategy::register_strategy(std::move(r)); });
  };
  const auto make = strategy::factory_of<SoloSgd>();
  EXPECT_NE(refuse({.name = "other", .make = make, .asynchronous = strategy::StrategyTrait::when("pace", {"free"})})
                .find("trait asynchronous depends on option 'pace', which it does not declare"),
            std::string::npos);
  EXPECT_NE(refuse({.name = "other",
                    .make = make,
                    .options = {strategy::StrategyOption::choice("pace", {"free", "lockstep"}, "free", "x.")},
                    .asynchronous = strategy::StrategyTrait::when("pace", {"fast"})})
                .find("trait asynchronous: option pace: unknown value 'fast'; expected one of: free, lockstep"),
            std::string::npos);
  EXPECT_FALSE(strategy::find_option("pace").has_value());
}

}  // namespace
}  // namespace fast
