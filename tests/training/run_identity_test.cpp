// The run identity (fast/training/run_identity.hpp): which settings change the fingerprint
// and which do not, and what identity_mismatch names. Torch-free.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "fast/runtime/registry.hpp"
#include "fast/training/run_identity.hpp"

namespace fast::training {
namespace {

// The full identity of a run of `o` (a model of 10 parameters in one tensor, 600 training samples).
nlohmann::json identity_of(const TrainOptions& o) {
  nlohmann::json identity = settings_identity(o, workers_before_launch(o));
  add_model_fields(identity, 10, core::flat_layout(10), 600);
  return with_fingerprint(std::move(identity));
}

struct Change {
  std::string what;
  std::function<void(TrainOptions&)> apply;
};

TEST(RunIdentity, EveryFingerprintedSettingChangesTheFingerprintAndTheOthersDoNot) {
  const TrainOptions base;
  const std::string fingerprint = identity_of(base)["fingerprint"];
  for (const Change& c : std::vector<Change>{
           {"seed", [](TrainOptions& o) { o.seed = 2; }},
           {"model", [](TrainOptions& o) { o.model = "cnn"; }},
           {"dataset", [](TrainOptions& o) { o.dataset = "synthetic"; }},
           {"batch", [](TrainOptions& o) { o.batch = 32; }},
           {"workers", [](TrainOptions& o) { o.workers = 3; }},
           {"strategy", [](TrainOptions& o) { o.worker.strategy.name = "local-sgd"; }},
           {"compress", [](TrainOptions& o) { o.worker.strategy.compress = "int8"; }},
           {"aggregate", [](TrainOptions& o) { o.worker.strategy.aggregate = "median"; }},
           {"optimizer", [](TrainOptions& o) { o.worker.optimizer.name = "adam"; }},
       }) {
    TrainOptions o = base;
    c.apply(o);
    const nlohmann::json changed = identity_of(o);
    EXPECT_NE(changed["fingerprint"], fingerprint) << c.what;
    EXPECT_NE(identity_mismatch(changed, identity_of(base), "f").find("with " + c.what + " = "), std::string::npos)
        << c.what << ": " << identity_mismatch(changed, identity_of(base), "f");
  }
  for (const Change& c : std::vector<Change>{
           {"steps", [](TrainOptions& o) { o.steps = 999; }},
           {"epochs", [](TrainOptions& o) { o.epochs = 7; }},
           {"lr", [](TrainOptions& o) { o.worker.optimizer.lr = 0.5; }},
           {"schedule", [](TrainOptions& o) { o.worker.schedule.name = "step"; }},
           {"checkpoint_every", [](TrainOptions& o) { o.checkpoint_every = 10; }},
           {"metrics", [](TrainOptions& o) { o.metrics = "m.jsonl"; }},
           // Another runtime of this build whose world lives in one process, if it has one (sim; a
           // minimal build has threads only).
           {"runtime",
            [](TrainOptions& o) {
              for (const runtime::RuntimeBackend& b : runtime::runtime_backends())
                if (!b.multi_process && b.name != o.runtime) o.runtime = b.name;
            }},
       }) {
    TrainOptions o = base;
    c.apply(o);
    EXPECT_EQ(identity_of(o)["fingerprint"], fingerprint) << c.what;
    EXPECT_EQ(identity_mismatch(identity_of(o), identity_of(base), "f"), "") << c.what;
  }
}

TEST(RunIdentity, TheStrategysOwnOptionsAreFingerprintedOnlyForIt) {
  TrainOptions o;
  EXPECT_FALSE(settings_identity(o, 2).contains("period"));
  EXPECT_TRUE(settings_identity(o, 2).contains("compress"));
  o.worker.strategy.name = "local-sgd";
  EXPECT_EQ(settings_identity(o, 2)["period"], "8");
  // A multi-process runtime (zmq, mpi) without a launcher: the world size is known once it started.
  for (const runtime::RuntimeBackend& b : runtime::runtime_backends()) {
    if (!b.multi_process) continue;
    o.runtime = b.name;
    EXPECT_FALSE(settings_identity(o, workers_before_launch(o)).contains("workers")) << b.name;
  }
}

TEST(RunIdentity, AMismatchNamesTheChosenSettingFirstThenTheFingerprint) {
  TrainOptions cnn;
  cnn.model = "cnn";
  nlohmann::json saved = settings_identity(cnn, 2);
  add_model_fields(saved, 99, core::flat_layout(99), 600);  // another model: another layout too
  saved = with_fingerprint(std::move(saved));
  const std::string why = identity_mismatch(saved, identity_of(TrainOptions{}), "ck/w.ckpt");
  EXPECT_EQ(why, "'ck/w.ckpt' was written by a run with model = \"cnn\"; this run has model = \"mlp\"");
  // Every field equal but an edited fingerprint (a file changed by hand).
  nlohmann::json edited = identity_of(TrainOptions{});
  edited["fingerprint"] = "0000000000000000";
  EXPECT_NE(identity_mismatch(edited, identity_of(TrainOptions{}), "f").find("run fingerprint \"0000000000000000\""),
            std::string::npos);
  EXPECT_NE(identity_mismatch(nullptr, identity_of(TrainOptions{}), "old.ckpt").find("carries no run identity"),
            std::string::npos);
}

}  // namespace
}  // namespace fast::training
