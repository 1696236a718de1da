#pragma once
// Private to fast_strategy: the seeded draws of the gossip strategies (adpsgd, gosgd). Each draw
// is a function of (seed, salt, rank, step) only, so a run is reproducible whatever the timing,
// and every worker knows which peer another worker picks at a given step.

#include <cstdint>
#include <vector>

#include "fast/runtime/context.hpp"

#include "fast/core/random.hpp"

namespace fast::strategy {

// Salts, so that the draws of different uses given one seed are unrelated streams.
inline constexpr std::uint64_t kAdpsgdPeerSalt = 0x61647073'67645f70ULL;  // "adpsgd_p"
inline constexpr std::uint64_t kGosgdPeerSalt = 0x676f7367'645f7065ULL;   // "gosgd_pe"
inline constexpr std::uint64_t kGosgdCoinSalt = 0x676f7367'645f636fULL;   // "gosgd_co"

// The candidates that ctx reports alive, in their order (all of them when nobody was lost).
inline std::vector<int> alive_only(const std::vector<int>& candidates, const runtime::Context& ctx) {
  std::vector<int> out;
  out.reserve(candidates.size());
  for (int p : candidates)
    if (ctx.alive(p)) out.push_back(p);
  return out;
}

// A generator for one worker's draws of one step: the rank's stream of the salt's use
// (core::derive_seed), then the step's seed within it, counted with a second odd increment.
inline core::SplitMix64 gossip_draw(std::uint64_t seed, std::uint64_t salt, int rank, std::int64_t step) {
  const std::uint64_t base = core::derive_seed(seed, salt, static_cast<std::uint64_t>(rank));
  return core::SplitMix64(core::splitmix64_at(base, static_cast<std::uint64_t>(step), 0xD1B54A32D192ED03ULL));
}

}  // namespace fast::strategy
