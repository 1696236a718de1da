#include <cstdint>
#include <limits>
#include <string>

#include "codecs.hpp"
#include "fast/core/saved_state.hpp"

namespace fast::compress {

void CountedStream::save(std::string_view prefix, core::SavedState& out) const {
  out.integers.insert_or_assign(std::string(prefix) + ".draws", static_cast<std::int64_t>(draws_));
}

void CountedStream::restore(std::string_view prefix, const core::SavedState& in, std::string_view source) {
  const auto draws = static_cast<std::uint64_t>(
      in.integer(std::string(prefix) + ".draws", 0, std::numeric_limits<std::int64_t>::max(), source));
  rng_.seed(seed_);
  rng_.discard(draws);  // one draw per encode: as many as the saving run's encodes
  draws_ = draws;
}

}  // namespace fast::compress
