#pragma once
// The manifest of a checkpoint's step folder (checkpoint_store.hpp): a JSON object written by the
// group's first member once every worker's file is in place, holding the format, the step, the
// world size and the run's identity ("run", run_identity.hpp). Torch-free.
//
// Thread-safety: free functions on their arguments.

#include <filesystem>

#include <nlohmann/json.hpp>

namespace fast::training {

// The manifest's name in a step folder.
inline constexpr const char* kManifestName = "manifest.json";

// The manifest in `file`, a JSON object. IoError naming the file when it cannot be read, is not
// JSON, or is JSON but not an object (a resume then falls back to an older checkpoint).
nlohmann::json read_checkpoint_manifest(const std::filesystem::path& file);

// The run identity a manifest read by read_checkpoint_manifest carries: its "run" member, or null
// when it has none (identity_mismatch then says the file carries no identity).
const nlohmann::json& manifest_identity(const nlohmann::json& manifest);

}  // namespace fast::training
