// `fast train` config files (src/settings/config.hpp, apply_config_file): TOML syntax, every key's
// type and range, inline tables, strategy options. The input is the file.

#include "config.hpp"
#include "fast/training/train_options.hpp"
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = fast::fuzz::write_input_file(data, size, ".toml");
  fast::fuzz::expect_accepted_or_refused([&] {
    fast::training::TrainOptions options;
    fast::settings::apply_config_file(options, file);
  });
  return 0;
}
