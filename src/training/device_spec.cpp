#include "fast/training/device_spec.hpp"

#include <charconv>

#include "fast/core/error.hpp"

namespace fast::training {

std::optional<int> parse_device(const std::string& spec, const char* option) {
  if (spec == "cpu") return std::nullopt;
  if (spec == "cuda") return -1;
  const std::string prefix = "cuda:";
  int index = -1;
  if (spec.size() > prefix.size() && spec.compare(0, prefix.size(), prefix) == 0) {
    const char* first = spec.data() + prefix.size();
    const char* last = spec.data() + spec.size();
    const auto [end, ec] = std::from_chars(first, last, index);
    if (ec == std::errc() && end == last && index >= 0) return index;
  }
  FAST_THROW(InvalidArgument, "{}: expected cpu, cuda or cuda:K (K a GPU index >= 0), got '{}'", option, spec);
}

}  // namespace fast::training
