#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "harness.hpp"

namespace fast::fuzz {

std::string write_input_file(const std::uint8_t* data, std::size_t size, std::string_view suffix) {
  static const std::string file =
      (std::filesystem::temp_directory_path() / ("fast_fuzz_" + std::to_string(::getpid()) + std::string(suffix)))
          .string();
  static const bool removed_at_exit = [] {
    std::atexit([] { std::remove(file.c_str()); });
    return true;
  }();
  (void)removed_at_exit;
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) throw std::runtime_error("fuzz: cannot write the input file " + file);
  return file;
}

}  // namespace fast::fuzz
