#pragma once
// The one checked integer conversion of FAST. Every integer that comes from outside the program (a
// flag, a config file, an environment variable, a cluster file, a dataset header, a wire frame or a
// rendezvous message) goes through it to its declared type and range, so that 2^32 + 3 workers are
// refused rather than read as 3 and a label of 2^40 is refused rather than sized into a model.
//
//   parse_int64(text, what)                   decimal text -> int64
//   checked_int<T>(value, what, min, max)     an integer of any type -> T, within [min, max]
//   parse_int<T>(text, what, min, max)        both
//
// `what` names the value for the user: a key ("cluster file 'c.toml': key 'hosts.cores'"), a flag,
// a variable or a file and field. The bounds are inclusive and default to T's own; a bound outside
// T's range is clamped to it. Failures throw core::InvalidArgument (exit code 2), whose message
// names `what`, the range and the value as given:
//   "<what>: expected an integer, got '<text>'"               (empty, a float, junk, trailing text)
//   "<what>: expected an integer >= <min>, got <value>"       (below min, no upper bound but T's)
//   "<what>: expected an integer from <min> to <max>, got <value>"  (every other out-of-range value)
// Thread-safety: pure functions.

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>

#include "fast/core/error.hpp"

namespace fast::core {

namespace detail {
// The out-of-range error; `value` is the text as given (`below`: under min, not over max) or the
// number formatted.
[[noreturn]] void throw_out_of_range(std::string_view what, long long min, long long max, bool max_is_types,
                                     std::string_view value, bool below);
[[noreturn]] void throw_out_of_range(std::string_view what, long long min, long long max, bool max_is_types,
                                     unsigned long long value, bool negative);
}  // namespace detail

// The largest and smallest values of T as long long (an unsigned 64-bit max clamps to 2^63 - 1).
template <std::integral T>
constexpr long long max_of() {
  return std::in_range<long long>(std::numeric_limits<T>::max()) ? static_cast<long long>(std::numeric_limits<T>::max())
                                                                 : std::numeric_limits<long long>::max();
}
template <std::integral T>
constexpr long long min_of() {
  return static_cast<long long>(std::numeric_limits<T>::min());
}

// Decimal text (an optional '-', then digits; nothing else: no '+', spaces, '0x', '.', exponent) as
// int64. A value beyond int64 is out of range, reported with the text as given.
std::int64_t parse_int64(std::string_view text, std::string_view what);

// `value` as T, checked to lie in [min, max] (each clamped to T's range).
template <std::integral T, std::integral V>
T checked_int(V value, std::string_view what, long long min = min_of<T>(), long long max = max_of<T>()) {
  const bool max_is_types = max >= max_of<T>();
  min = std::max(min, min_of<T>());
  max = std::min(max, max_of<T>());
  if (std::cmp_less(value, min) || std::cmp_greater(value, max)) {
    const bool negative = std::cmp_less(value, 0);
    const unsigned long long magnitude = negative
                                             ? 0ULL - static_cast<unsigned long long>(static_cast<long long>(value))
                                             : static_cast<unsigned long long>(value);
    detail::throw_out_of_range(what, min, max, max_is_types, magnitude, negative);
  }
  return static_cast<T>(value);
}

// Decimal text as T within [min, max]: parse_int64 then checked_int; an out-of-range value is
// reported as given ("-01", not "-1").
template <std::integral T>
T parse_int(std::string_view text, std::string_view what, long long min = min_of<T>(), long long max = max_of<T>()) {
  const std::int64_t value = parse_int64(text, what);
  const bool max_is_types = max >= max_of<T>();
  min = std::max(min, min_of<T>());
  max = std::min(max, max_of<T>());
  if (std::cmp_less(value, min) || std::cmp_greater(value, max))
    detail::throw_out_of_range(what, min, max, max_is_types, text, std::cmp_less(value, min));
  return static_cast<T>(value);
}

}  // namespace fast::core
