#pragma once
// Checks that `fast train` can use the paths it is given (path_kind) and write its outputs
// (check_writable), made before any data is read (docs/errors.md,
// "Before any work"): a run that could only fail when it writes, after training, is refused at
// once. Torch-free.
//
// Thread-safety: free functions; each probe file has a name of its own (process id and a counter).

#include <filesystem>
#include <string_view>

namespace fast::training {

// InvalidArgument naming `key`, the path and why, unless `path` (a file, or a folder when
// `folder`) can be written as its writer does: an existing path must be of its kind (a folder for
// `folder`, else not a folder) and open for writing; a missing one is created with its missing
// parents, so the nearest existing ancestor must be a folder in which a file can be created (a probe
// file, created and removed at once: the permission bits do not say so for root, nor on a read-only
// file system). An empty path is not checked.
void check_writable(const std::filesystem::path& path, std::string_view key, bool folder);

// What is at `path` (symbolic links followed). InvalidArgument naming `key`, the path and the
// system's reason when it cannot tell (a name too long, a loop of symbolic links, a folder it may
// not search): such a path would otherwise fail later, with a less clear error.
enum class PathKind { missing, folder, other };
PathKind path_kind(const std::filesystem::path& path, std::string_view key);

}  // namespace fast::training
