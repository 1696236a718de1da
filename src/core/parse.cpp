#include "fast/core/parse.hpp"

#include <charconv>

#include <fmt/format.h>

namespace fast::core {

namespace detail {

void throw_out_of_range(std::string_view what, long long min, long long max, bool max_is_types, std::string_view value,
                        bool below) {
  if (max_is_types && below) FAST_THROW(InvalidArgument, "{}: expected an integer >= {}, got {}", what, min, value);
  FAST_THROW(InvalidArgument, "{}: expected an integer from {} to {}, got {}", what, min, max, value);
}

void throw_out_of_range(std::string_view what, long long min, long long max, bool max_is_types,
                        unsigned long long value, bool negative) {
  const std::string text = negative ? fmt::format("-{}", value) : fmt::format("{}", value);
  // Below min with no upper bound but the type's: ">= min" says all there is to say.
  if (max_is_types && (negative || value < static_cast<unsigned long long>(std::max(min, 0LL))))
    FAST_THROW(InvalidArgument, "{}: expected an integer >= {}, got {}", what, min, text);
  FAST_THROW(InvalidArgument, "{}: expected an integer from {} to {}, got {}", what, min, max, text);
}

}  // namespace detail

std::int64_t parse_int64(std::string_view text, std::string_view what) {
  std::int64_t value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(first, last, value);
  if (ec == std::errc::result_out_of_range && end == last)
    detail::throw_out_of_range(what, min_of<std::int64_t>(), max_of<std::int64_t>(), false, fmt::format("'{}'", text),
                               text.starts_with('-'));
  if (text.empty() || ec != std::errc() || end != last)
    FAST_THROW(InvalidArgument, "{}: expected an integer, got '{}'", what, text);
  return value;
}

}  // namespace fast::core
