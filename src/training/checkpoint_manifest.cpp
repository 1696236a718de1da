#include "checkpoint_manifest.hpp"

#include <fstream>
#include <string>

#include "fast/core/error.hpp"

namespace fast::training {

nlohmann::json read_checkpoint_manifest(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) FAST_THROW(core::IoError, "checkpoint manifest '{}': cannot read it", file.string());
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    // nlohmann's "[json.exception.parse_error.101] parse error at line 2, column 0: ...": from "line".
    const std::string what = e.what();
    const std::size_t at = what.find("at line ");
    FAST_THROW(core::IoError, "checkpoint manifest '{}': not valid JSON ({})", file.string(),
               at == std::string::npos ? what : what.substr(at + 3));
  }
  if (!manifest.is_object())
    FAST_THROW(core::IoError, "checkpoint manifest '{}': expected a JSON object, got a JSON {}", file.string(),
               manifest.type_name());
  return manifest;
}

const nlohmann::json& manifest_identity(const nlohmann::json& manifest) {
  static const nlohmann::json none;
  const auto run = manifest.find("run");
  return run == manifest.end() ? none : *run;
}

}  // namespace fast::training
