#pragma once
// Factories of the codecs, with their validated options (semantics in fast/compress/codec.hpp).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string_view>

#include "fast/compress/codec.hpp"
#include "fast/compress/powersgd.hpp"

namespace fast::core {
struct SavedState;
}  // namespace fast::core

namespace fast::compress {

// A codec's random stream (int8, randk: one draw per encode) that counts its draws, so that a
// checkpoint can put it back: the seed again, then the saved number of draws discarded.
class CountedStream {
 public:
  explicit CountedStream(std::uint64_t seed) : seed_(seed), rng_(seed) {}
  std::uint64_t operator()() {
    ++draws_;
    return rng_();
  }
  // "<prefix>.draws".
  void save(std::string_view prefix, core::SavedState& out) const;
  void restore(std::string_view prefix, const core::SavedState& in, std::string_view source);

 private:
  std::uint64_t seed_;
  std::mt19937_64 rng_;
  std::uint64_t draws_ = 0;
};

std::unique_ptr<Codec> make_none();
std::unique_ptr<Codec> make_fp16();
std::unique_ptr<Codec> make_bf16();
std::unique_ptr<Codec> make_int8(int levels, std::uint64_t bucket, std::uint64_t seed);
std::unique_ptr<Codec> make_sign();

// How many elements a topk/randk codec keeps of n: exactly `k` (clamped to n) when k > 0, else
// max(1, ceil(ratio n)) clamped to n (0 for n == 0).
struct KeepCount {
  double ratio = 0.01;
  std::size_t k = 0;
  std::size_t of(std::size_t n) const;
};
// per_tensor (with a layout): k = keep.of(block size) in each block of the layout, elements outside
// every block forming one more block; without a layout (or per_tensor false): k = keep.of(n) overall.
std::unique_ptr<Codec> make_topk(KeepCount keep, bool per_tensor = false, const core::Layout* layout = nullptr);
std::unique_ptr<Codec> make_randk(KeepCount keep, std::uint64_t seed);
std::unique_ptr<Codec> make_threshold(float value);
// layout nullptr: flat_layout(n) at encode time.
std::unique_ptr<Codec> make_powersgd(PowerSgdOptions options, const core::Layout* layout);

}  // namespace fast::compress
