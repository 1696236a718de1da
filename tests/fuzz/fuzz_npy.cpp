// .npy arrays (npy.hpp, read_npy): the header's magic, version, length, descr, shape and order, and
// the data's size against the declared shape, from memory.

#include <algorithm>
#include <cstring>

#include "fast/adapters/torch/npy.hpp"
#include "harness.hpp"

namespace {

class Memory final : public fast::torch::ByteSource {
 public:
  Memory(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint64_t size() const override { return size_; }
  void read(std::uint8_t* out, std::size_t n) override {
    if (n > size_ - at_) FAST_THROW(fast::IoError, "{}: read past the end", where_);
    if (n == 0) return;  // an empty array's data: out may be null
    std::memcpy(out, data_ + at_, n);
    at_ += n;
  }
  const std::string& where() const override { return where_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
  std::string where_ = "fuzz.npy";
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fast::fuzz::expect_accepted_or_refused([&] {
    Memory source(data, size);
    const fast::torch::NpyArray a = fast::torch::read_npy(source);
    // What the dataset code does with an array: its count, every element as a number.
    const auto n = static_cast<std::size_t>(a.count());
    if (n * fast::torch::itemsize_of(a.type) != a.bytes.size()) __builtin_trap();
    for (std::size_t i = 0; i < std::min<std::size_t>(n, 64); ++i) (void)a.number(i);
  });
  return 0;
}
