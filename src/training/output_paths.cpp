#include "output_paths.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "fast/core/error.hpp"

namespace fast::training {

namespace {

namespace fs = std::filesystem;

// "" when a file can be created in the folder `dir`, else the system's reason.
std::string probe_folder(const fs::path& dir) {
  static std::atomic<unsigned> counter{0};
  const fs::path probe = dir / fmt::format(".fast-write-probe-{}-{}", ::getpid(), counter++);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

}  // namespace

PathKind path_kind(const fs::path& path, std::string_view key) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::exists(status)) return fs::is_directory(status) ? PathKind::folder : PathKind::other;
  // Missing, or below a file (ENOTDIR): nothing there. Anything else is a path the system refuses.
  FAST_ENFORCE(!ec || ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory,
               "{}: cannot use the path '{}': {}", key, path.string(), ec.message());
  return PathKind::missing;
}

void check_writable(const fs::path& path, std::string_view key, bool folder) {
  if (path.empty()) return;
  std::error_code ec;
  if (const PathKind kind = path_kind(path, key); kind != PathKind::missing) {
    const bool is_folder = kind == PathKind::folder;
    FAST_ENFORCE(is_folder == folder, "{}: '{}' is {}; expected {}", key, path.string(),
                 is_folder ? "a folder" : "a file", folder ? "a folder" : "a file path");
    std::string why;
    if (folder) {
      why = probe_folder(path);
    } else if (const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC); fd < 0) {  // opened, not truncated
      why = std::strerror(errno);
    } else {
      ::close(fd);
    }
    FAST_ENFORCE(why.empty(), "{}: cannot write '{}': {} (checked before the run starts)", key, path.string(), why);
    return;
  }
  // The nearest existing ancestor: the writer creates what is missing below it.
  fs::path ancestor = fs::absolute(path, ec).parent_path();
  while (!ancestor.empty() && !fs::exists(ancestor, ec) && ancestor != ancestor.root_path())
    ancestor = ancestor.parent_path();
  FAST_ENFORCE(fs::is_directory(ancestor, ec),
               "{}: cannot create '{}': '{}' is a file, not a folder (checked before the run starts)", key,
               path.string(), ancestor.string());
  const std::string why = probe_folder(ancestor);
  FAST_ENFORCE(why.empty(),
               "{}: cannot create '{}': no file can be created in '{}': {} (checked before the run starts)", key,
               path.string(), ancestor.string(), why);
}

}  // namespace fast::training
