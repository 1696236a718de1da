#pragma once
// JsonlWriter: appends one JSON object per line to a file (the metrics stream of a run; the schema
// is in docs/metrics.md). Thread-safe: the workers of a process share one writer and each record
// is written whole. Every record is flushed, so a crashed run keeps what it had measured.

#include <filesystem>
#include <fstream>
#include <mutex>

#include <nlohmann/json.hpp>

namespace fast::metrics {

class JsonlWriter {
 public:
  // Creates or truncates path (parent folders are created). Throws IoError naming the path.
  explicit JsonlWriter(const std::filesystem::path& path);
  // A writer that drops every record (no --metrics file).
  JsonlWriter() = default;

  void write(const nlohmann::json& record);
  bool enabled() const noexcept { return out_.is_open(); }
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  std::mutex mutex_;
  std::ofstream out_;
};

// Writes `value` as pretty JSON to path (parent folders created). Throws IoError naming the path.
void write_json_file(const std::filesystem::path& path, const nlohmann::json& value);

}  // namespace fast::metrics
