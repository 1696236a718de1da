#pragma once
// SavedState: named values a component saves to continue exactly where it stopped (a worker's
// checkpoint, docs/faults.md "Checkpoints and resume"): float32 arrays (a replica, optimizer
// buffers), float64 arrays (error-feedback residuals, push-sum numerators) and 64-bit integers (step
// and draw counts), and short texts (the identity of the run that saved it). Layers below the strategy (compress/,
// collective/) save their own state into it under a prefix their owner gives; strategy/checkpoint.hpp is its file
// format.
//
// Thread-safety: a plain value; no synchronisation.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace fast::core {

struct SavedState {
  std::map<std::string, std::vector<float>, std::less<>> arrays;
  std::map<std::string, std::vector<double>, std::less<>> doubles;
  std::map<std::string, std::int64_t, std::less<>> integers;
  std::map<std::string, std::string, std::less<>> texts;  // UTF-8, each at most 1 MiB

  // The array `name` with exactly `size` elements; IoError naming the saved state's `source`, the
  // array, the expected and the saved size otherwise (state of another model, optimizer or codec).
  const std::vector<float>& array(std::string_view name, std::size_t size, std::string_view source) const;
  // The same for a float64 array.
  const std::vector<double>& double_array(std::string_view name, std::size_t size, std::string_view source) const;
  // The integer `name`; IoError naming `source` when it is missing.
  std::int64_t integer(std::string_view name, std::string_view source) const;
  // The integer `name`, which must lie in [low, high]: IoError naming `source`, expected and got otherwise.
  std::int64_t integer(std::string_view name, std::int64_t low, std::int64_t high, std::string_view source) const;
  // The float64 arrays named "<prefix><key><suffix>", key an unsigned decimal integer (per-key
  // state such as error-feedback residuals), by key. Every float64 array whose name starts with
  // `prefix` must have that form: IoError naming `source` and the name otherwise.
  std::map<std::uint64_t, const std::vector<double>*> keyed_doubles(std::string_view prefix, std::string_view suffix,
                                                                    std::string_view source) const;
};

}  // namespace fast::core
