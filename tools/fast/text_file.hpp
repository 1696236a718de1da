#pragma once
// Whole-file text I/O for the command's outputs and inputs (fast compare, fast report). Errors are
// IoError naming `who` (the subcommand) and the path.

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "fast/core/error.hpp"

namespace fast::cli {

inline std::string read_text_file(const std::filesystem::path& file, const char* who) {
  std::ifstream in(file, std::ios::binary);
  FAST_ENFORCE_AS(core::IoError, in.good(), "{}: cannot read '{}'", who, file.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Replaces the file's content with `text`, creating its missing parent folders (as fast train's
// --metrics and --summary do).
inline void write_text_file(const std::filesystem::path& file, const std::string& text, const char* who) {
  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  FAST_ENFORCE_AS(core::IoError, out.good(), "{}: cannot write '{}': {}", who, file.string(),
                  ec ? "cannot create its folder: " + ec.message() : std::string(std::strerror(errno)));
  out << text;
  out.flush();
  FAST_ENFORCE_AS(core::IoError, out.good(), "{}: writing '{}' failed: {}", who, file.string(), std::strerror(errno));
}

}  // namespace fast::cli
