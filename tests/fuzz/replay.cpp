// The main of a fuzz harness without libFuzzer: replays every file of the folders and files given
// (folders recursively, in name order) through LLVMFuzzerTestOneInput, once each. Exit 0 when every
// input was accepted or refused as harness.hpp allows; 1 with the input's name when an exception
// escaped or nothing was found (a corpus is never empty). Crashes and sanitizer reports end the
// process as they would under libFuzzer.

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <vector>

#include "harness.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    if (fs::is_directory(arg)) {
      for (const auto& entry : fs::recursive_directory_iterator(arg))
        if (entry.is_regular_file()) inputs.push_back(entry.path());
    } else if (fs::is_regular_file(arg)) {
      inputs.push_back(arg);
    } else {
      std::cerr << "replay: " << arg.string() << ": no such file or folder\n";
      return 1;
    }
  }
  if (inputs.empty()) {
    std::cerr << "replay: no inputs (usage: " << argv[0] << " CORPUS_FOLDER_OR_FILE...)\n";
    return 1;
  }
  std::sort(inputs.begin(), inputs.end());
  for (const fs::path& input : inputs) {
    std::ifstream in(input, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    try {
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    } catch (const std::exception& e) {
      std::cerr << "replay: " << input.string() << ": an undocumented exception escaped: " << e.what() << "\n";
      return 1;
    } catch (...) {
      std::cerr << "replay: " << input.string() << ": a non-standard exception escaped\n";
      return 1;
    }
  }
  std::cout << "replay: " << inputs.size() << " inputs, each accepted or refused as documented\n";
  return 0;
}
