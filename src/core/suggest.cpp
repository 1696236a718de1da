#include "fast/core/suggest.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

#include <fmt/format.h>

namespace fast::core {

namespace {

char folded(char c) {
  if (c == '-') return '_';
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

// Edits allowed for a name given of `size` characters.
std::size_t edits_allowed(std::size_t size) { return size <= 4 ? 1 : size <= 8 ? 2 : 3; }

// Whether `shorter` begins `longer`, folded as name_distance folds.
bool begins(std::string_view shorter, std::string_view longer) {
  if (shorter.size() > longer.size()) return false;
  for (std::size_t i = 0; i < shorter.size(); ++i)
    if (folded(shorter[i]) != folded(longer[i])) return false;
  return true;
}

// The one candidate that begins `given` or that `given` begins, the shorter of the two having at
// least kMinPrefix characters ("batch-size" -> "batch", "warmup" -> "warmup-steps"); null when none
// or several do ("checkpoint" begins three options: no guess).
constexpr std::size_t kMinPrefix = 4;
const std::string* only_prefix_match(std::string_view given, const std::vector<std::string>& candidates) {
  const std::string* match = nullptr;
  for (const std::string& c : candidates) {
    if (std::min(c.size(), given.size()) < kMinPrefix || !(begins(c, given) || begins(given, c))) continue;
    if (match != nullptr) return nullptr;
    match = &c;
  }
  return match;
}

}  // namespace

std::size_t name_distance(std::string_view a, std::string_view b) {
  // d[i][j]: edits from a's first i characters to b's first j; three rows suffice for the swap.
  const std::size_t n = b.size();
  std::vector<std::size_t> before(n + 1), previous(n + 1), row(n + 1);
  for (std::size_t j = 0; j <= n; ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (std::size_t j = 1; j <= n; ++j) {
      const bool same = folded(a[i - 1]) == folded(b[j - 1]);
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && folded(a[i - 1]) == folded(b[j - 2]) && folded(a[i - 2]) == folded(b[j - 1]))
        row[j] = std::min(row[j], before[j - 2] + 1);
    }
    std::swap(before, previous);
    std::swap(previous, row);
  }
  return previous[n];
}

std::optional<std::string> nearest_name(std::string_view given, const std::vector<std::string>& candidates) {
  if (std::find(candidates.begin(), candidates.end(), given) != candidates.end()) return std::nullopt;
  const std::string* nearest = nullptr;
  std::size_t best = std::numeric_limits<std::size_t>::max();
  std::size_t best_prefix = 0;
  const std::size_t allowed = edits_allowed(given.size());
  // Characters `given` and `c` share at their start, case aside.
  auto common_prefix = [&](const std::string& c) {
    std::size_t k = 0;
    while (k < given.size() && k < c.size() && folded(given[k]) == folded(c[k])) ++k;
    return k;
  };
  for (const std::string& c : candidates) {
    // The distance is at least the difference in length: a name far longer than every candidate
    // (a hostile file's key) costs no more than a comparison of lengths.
    if (given.size() > c.size() + allowed || c.size() > given.size() + allowed) continue;
    const std::size_t d = name_distance(given, c);
    if (d > allowed || d >= c.size() || d > best) continue;
    // Of two names as near, the one that shares the longer start ('sped': 'speed' over 'seed').
    const std::size_t prefix = common_prefix(c);
    if (d < best || prefix > best_prefix) {
      best = d;
      best_prefix = prefix;
      nearest = &c;
    }
  }
  if (nearest == nullptr) nearest = only_prefix_match(given, candidates);
  if (nearest == nullptr) return std::nullopt;
  return *nearest;
}

std::string did_you_mean(std::string_view given, const std::vector<std::string>& candidates) {
  const std::optional<std::string> nearest = nearest_name(given, candidates);
  return nearest ? fmt::format(" (did you mean '{}'?)", *nearest) : std::string();
}

}  // namespace fast::core
