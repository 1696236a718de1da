#include "fast/metrics/jsonl_writer.hpp"

#include <cerrno>
#include <cstring>

#include "fast/core/error.hpp"

namespace fast::metrics {

namespace {
std::ofstream open_for_writing(const std::filesystem::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::out | std::ios::trunc);
  if (!out) FAST_THROW(core::IoError, "cannot write '{}': {}", path.string(), std::strerror(errno));
  return out;
}
}  // namespace

JsonlWriter::JsonlWriter(const std::filesystem::path& path) : path_(path), out_(open_for_writing(path)) {}

void JsonlWriter::write(const nlohmann::json& record) {
  if (!out_.is_open()) return;
  const std::string line = record.dump() + "\n";
  std::lock_guard<std::mutex> lock(mutex_);
  out_.write(line.data(), static_cast<std::streamsize>(line.size()));
  out_.flush();
  if (!out_) FAST_THROW(core::IoError, "writing metrics to '{}' failed: {}", path_.string(), std::strerror(errno));
}

void write_json_file(const std::filesystem::path& path, const nlohmann::json& value) {
  std::ofstream out = open_for_writing(path);
  out << value.dump(2) << "\n";
  out.flush();
  if (!out) FAST_THROW(core::IoError, "writing '{}' failed: {}", path.string(), std::strerror(errno));
}

}  // namespace fast::metrics
