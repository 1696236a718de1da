// Checkpoint manifests (src/adapters/torch/checkpoint_manifest.hpp) and the run identity they carry
// (run_identity.hpp, identity_mismatch): what a resume reads of a step folder before any worker
// file. The input is the manifest file; its identity is compared with a fixed run's, as a resume
// compares it with its own. The same bytes are also tried as the "run" text of a worker file,
// which a resume parses without exceptions (check_identities in checkpoint_store.cpp).

#include <array>

#include "checkpoint_manifest.hpp"
#include "fast/adapters/torch/run_identity.hpp"
#include "fast/adapters/torch/train_options.hpp"
#include "harness.hpp"

namespace {

const nlohmann::json& expected_identity() {
  static const nlohmann::json identity = [] {
    nlohmann::json id = fast::torch::settings_identity(fast::torch::TrainOptions{}, 2);
    const std::array<fast::core::TensorBlock, 1> layout{
        fast::core::TensorBlock{.offset = 0, .numel = 6, .rows = 2, .shape = {2, 3}, .name = "fc.weight"}};
    fast::torch::add_model_fields(id, 6, layout, 100);
    return fast::torch::with_fingerprint(std::move(id));
  }();
  return identity;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = fast::fuzz::write_input_file(data, size, ".json");
  fast::fuzz::expect_accepted_or_refused([&] {
    const nlohmann::json manifest = fast::torch::read_checkpoint_manifest(file);
    (void)fast::torch::identity_mismatch(fast::torch::manifest_identity(manifest), expected_identity(), file);
  });
  const nlohmann::json run = nlohmann::json::parse(fast::fuzz::text_of(data, size), nullptr, false);
  (void)fast::torch::identity_mismatch(run, expected_identity(), "worker-0.ckpt");
  return 0;
}
