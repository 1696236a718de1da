#pragma once
// The status of a path FAST was given (a config, cluster, checkpoint or edge-list file, an output
// path), without std::filesystem's exceptions: a name the system refuses (too long, a loop of
// symbolic links, a folder on the way without permission) is core::IoError (exit code 3) naming
// `what` and the path, not a filesystem_error that would end the program as an unexpected error.
// A path that does not exist is not an error: its status is file_type::not_found.
// Thread-safety: a pure function of the filesystem.

#include <filesystem>
#include <string>
#include <string_view>

namespace fast::core {

std::filesystem::file_status file_status_of(const std::filesystem::path& path, std::string_view what);

// Whether a second reader of `path` gets the text a first reader got: an empty path, a regular
// file, or one that does not exist (its reader names it). A pipe, `<(...)` or /dev/stdin gives
// its text to one reader only: a check made before the run must leave it to the run.
bool readable_twice(const std::filesystem::path& path);

// For a message about a missing file: " (relative to the working directory DIR)" where `path` is
// relative, else "" (a path set in a config file is taken from the working directory, not the file's).
std::string relative_to_note(const std::filesystem::path& path);

}  // namespace fast::core
