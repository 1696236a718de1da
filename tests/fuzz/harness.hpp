#pragma once
// The contract of a fuzz harness (docs/errors.md, "Fuzzing"). Each fuzz_<name>.cpp defines
// LLVMFuzzerTestOneInput for one input format and is built two ways (tests/fuzz/CMakeLists.txt):
// with libFuzzer under clang (`make fuzz`: -fsanitize=fuzzer,address,undefined), and with replay.cpp
// as its main (every build: the ctest fuzz_<name>_corpus replays the corpus tests/fuzz/corpus/<name>).
//
// An input may be accepted or refused with a documented error: core::InvalidArgument (exit code 2)
// or core::IoError (exit code 3). Anything else fails the run: another exception (std::bad_alloc,
// std::out_of_range, a library's own), a crash, a sanitizer report, a leak or a hang (libFuzzer's
// -timeout; ctest's TIMEOUT for the replay).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "fast/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace fast::fuzz {

// Runs f on one input; a documented refusal returns normally, everything else escapes.
template <typename F>
void expect_accepted_or_refused(F&& f) {
  try {
    f();
  } catch (const core::InvalidArgument&) {
  } catch (const core::IoError&) {
  }
}

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

inline std::span<const std::byte> bytes_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size};
}

// A file of this process holding `size` bytes of `data`, for readers that take a path (rewritten by
// every call; one per harness and process).
std::string write_input_file(const std::uint8_t* data, std::size_t size, std::string_view suffix);

}  // namespace fast::fuzz
