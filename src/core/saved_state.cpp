#include "fast/core/saved_state.hpp"

#include <charconv>

#include "fast/core/error.hpp"

namespace fast::core {

namespace {
template <typename Map>
const typename Map::mapped_type& sized(const Map& map, std::string_view kind, std::string_view name, std::size_t size,
                                       std::string_view source) {
  const auto it = map.find(name);
  if (it == map.end()) FAST_THROW(IoError, "checkpoint '{}': no {} '{}'", source, kind, name);
  if (it->second.size() != size)
    FAST_THROW(IoError,
               "checkpoint '{}': {} '{}' has {} elements, expected {} (saved by another model, optimizer, "
               "strategy or codec?)",
               source, kind, name, it->second.size(), size);
  return it->second;
}
}  // namespace

const std::vector<float>& SavedState::array(std::string_view name, std::size_t size, std::string_view source) const {
  return sized(arrays, "array", name, size, source);
}

const std::vector<double>& SavedState::double_array(std::string_view name, std::size_t size,
                                                    std::string_view source) const {
  return sized(doubles, "float64 array", name, size, source);
}

std::int64_t SavedState::integer(std::string_view name, std::string_view source) const {
  const auto it = integers.find(name);
  if (it == integers.end()) FAST_THROW(IoError, "checkpoint '{}': no integer '{}'", source, name);
  return it->second;
}

std::int64_t SavedState::integer(std::string_view name, std::int64_t low, std::int64_t high,
                                 std::string_view source) const {
  const std::int64_t value = integer(name, source);
  if (value < low || value > high)
    FAST_THROW(IoError, "checkpoint '{}': integer '{}' is {}, expected {} to {}", source, name, value, low, high);
  return value;
}

std::map<std::uint64_t, const std::vector<double>*> SavedState::keyed_doubles(std::string_view prefix,
                                                                              std::string_view suffix,
                                                                              std::string_view source) const {
  std::map<std::uint64_t, const std::vector<double>*> out;
  for (auto it = doubles.lower_bound(prefix); it != doubles.end() && it->first.starts_with(prefix); ++it) {
    const std::string_view rest = std::string_view(it->first).substr(prefix.size());
    std::uint64_t key = 0;
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), key);
    if (error != std::errc() || end == rest.data() || std::string_view(end, rest.data() + rest.size()) != suffix)
      FAST_THROW(IoError, "checkpoint '{}': float64 array '{}' is not named {}<key>{}", source, it->first, prefix,
                 suffix);
    out.emplace(key, &it->second);
  }
  return out;
}

}  // namespace fast::core
