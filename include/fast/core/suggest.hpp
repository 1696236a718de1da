#pragma once
// A suggestion for a name the user mistyped: the error of an unknown setting, key or name (a config
// key, a strategy, a model, a runtime, a codec) ends with " (did you mean 'NAME'?)" when one known
// name is that close to what was given.
//
//   did_you_mean("stratgy", {"strategy", "steps"})       -> " (did you mean 'strategy'?)"
//   did_you_mean("peer-timeout", {"peer_timeout"})        -> " (did you mean 'peer_timeout'?)"
//   did_you_mean("sgdm", {"mlp", "cnn"})                  -> ""
//   did_you_mean("batch-size", {"batch", "seed"})         -> " (did you mean 'batch'?)"
//
// Near: at most 1 edit for a name given of up to 4 characters, 2 up to 8, 3 beyond, and fewer edits
// than the candidate has characters. An edit inserts, deletes or replaces one character or swaps
// two adjacent ones; upper and lower case, and '-' and '_', count as the same character (flags use
// '-' where config keys use '_'). The nearest candidate wins, the first of the list on a tie.
// When none is that near, the one candidate that begins the name given, or that the name given
// begins, is suggested, the shorter of the two having at least 4 characters ("batch-size" ->
// "batch", "resnet18" -> "resnet", "warmup" -> "warmup-steps"); none when several do.
// Thread-safety: a pure function.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fast::core {

// Edits from `a` to `b` as above (restricted Damerau-Levenshtein: no substring is edited twice).
std::size_t name_distance(std::string_view a, std::string_view b);

// The nearest of `candidates` to `given`, or nothing when none is near (or `given` is one of them).
std::optional<std::string> nearest_name(std::string_view given, const std::vector<std::string>& candidates);

// " (did you mean 'NAME'?)" for nearest_name, or "".
std::string did_you_mean(std::string_view given, const std::vector<std::string>& candidates);

}  // namespace fast::core
