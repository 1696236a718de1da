#include "fast/core/file_status.hpp"

#include "fast/core/error.hpp"

namespace fast::core {

std::filesystem::file_status file_status_of(const std::filesystem::path& path, std::string_view what) {
  std::error_code error;
  std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error && error != std::errc::no_such_file_or_directory && error != std::errc::not_a_directory)
    FAST_THROW(IoError, "{} '{}' cannot be read: {}", what, path.string(), error.message());
  return status;
}

bool readable_twice(const std::filesystem::path& path) {
  if (path.empty()) return true;
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  return !std::filesystem::exists(status) || std::filesystem::is_regular_file(status);
}

std::string relative_to_note(const std::filesystem::path& path) {
  if (path.empty() || path.is_absolute()) return "";
  std::error_code error;
  const std::filesystem::path here = std::filesystem::current_path(error);
  return error ? std::string(" (relative to the working directory)")
               : " (relative to the working directory " + here.string() + ")";
}

}  // namespace fast::core
