// IDX files (idx.hpp), gzip or not: the magic, the declared sizes against the file's size, the
// payload's length, and zlib's errors.

#include "fast/adapters/torch/idx.hpp"
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = fast::fuzz::write_input_file(data, size, ".idx");
  fast::fuzz::expect_accepted_or_refused([&] {
    const fast::torch::IdxImages images = fast::torch::read_idx_images(file);
    if (images.pixels.size() != std::size_t{images.count} * images.rows * images.cols) __builtin_trap();
  });
  fast::fuzz::expect_accepted_or_refused([&] { (void)fast::torch::read_idx_labels(file); });
  return 0;
}
