// Checkpoint manifests (src/training/checkpoint_manifest.hpp) and the run identity they carry
// (run_identity.hpp, identity_mismatch): what a resume reads of a step folder before any worker
// file. The input is the manifest file; its identity is compared with a fixed run's, as a resume
// compares it with its own. The same bytes are also tried as the "run" text of a worker file,
// which a resume parses without exceptions (check_identities in checkpoint_store.cpp).

#include <array>

#include "checkpoint_manifest.hpp"
#include "fast/training/run_identity.hpp"
#include "fast/training/train_options.hpp"
#include "harness.hpp"

namespace {

const nlohmann::json& expected_identity() {
  static const nlohmann::json identity = [] {
    nlohmann::json id = fast::training::settings_identity(fast::training::TrainOptions{}, 2);
    const std::array<fast::core::TensorBlock, 1> layout{
        fast::core::TensorBlock{.offset = 0, .numel = 6, .rows = 2, .shape = {2, 3}, .name = "fc.weight"}};
    fast::training::add_model_fields(id, 6, layout, 100);
    return fast::training::with_fingerprint(std::move(id));
  }();
  return identity;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = fast::fuzz::write_input_file(data, size, ".json");
  fast::fuzz::expect_accepted_or_refused([&] {
    const nlohmann::json manifest = fast::training::read_checkpoint_manifest(file);
    (void)fast::training::identity_mismatch(fast::training::manifest_identity(manifest), expected_identity(), file);
  });
  const nlohmann::json run = nlohmann::json::parse(fast::fuzz::text_of(data, size), nullptr, false);
  (void)fast::training::identity_mismatch(run, expected_identity(), "worker-0.ckpt");
  return 0;
}
