#pragma once
// Whole-file text I/O for the command's outputs and inputs (fast compare, fast report). Errors are
// IoError naming `who` (the subcommand) and the path.

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

// Replaces the file's content with `text`.
inline void write_text_file(const std::filesystem::path& file, const std::string& text, const char* who) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  FAST_ENFORCE_AS(core::IoError, out.good(), "{}: cannot write '{}'", who, file.string());
  out << text;
  out.flush();
  FAST_ENFORCE_AS(core::IoError, out.good(), "{}: writing '{}' failed", who, file.string());
}

}  // namespace fast::cli
