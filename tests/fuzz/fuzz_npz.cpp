// .npz archives (npy.hpp, read_npz): libzip's archive checks, member names and claimed sizes, and
// each member as a .npy array.

#include "fast/adapters/torch/npy.hpp"
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = fast::fuzz::write_input_file(data, size, ".npz");
  fast::fuzz::expect_accepted_or_refused([&] {
    for (const auto& [name, array] : fast::torch::read_npz(file))
      if (static_cast<std::size_t>(array.count()) * fast::torch::itemsize_of(array.type) != array.bytes.size())
        __builtin_trap();
  });
  return 0;
}
