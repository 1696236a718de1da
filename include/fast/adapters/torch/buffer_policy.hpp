#pragma once
// What the workers of a synchronous run do with their models' buffers (BatchNorm's running
// statistics, any registered buffer) after every step: the setting `buffers` of `fast train`
// (docs/config.md) and `buffers=` of fast.torch.Worker (docs/python.md). Torch-free: the settings
// table reads it without libtorch.

#include <array>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"

namespace fast::torch {

enum class BufferPolicy {
  automatic,  // "auto": broadcast for synchronous strategies, local for asynchronous ones
  broadcast,  // every worker's buffers become rank 0's (DistributedDataParallel's default)
  average,    // floating-point buffers become the mean over the workers, the others rank 0's
  local,      // each worker keeps its own
};

inline constexpr std::array<std::string_view, 4> kBufferPolicyNames{"auto", "broadcast", "average", "local"};

// The policy named `text`; InvalidArgument naming `key`, the accepted names and the value.
inline BufferPolicy parse_buffer_policy(std::string_view text, std::string_view key = "buffers") {
  for (std::size_t i = 0; i < kBufferPolicyNames.size(); ++i)
    if (kBufferPolicyNames[i] == text) return static_cast<BufferPolicy>(i);
  FAST_THROW(core::InvalidArgument, "{}: expected one of {}, got '{}'", key, fmt::join(kBufferPolicyNames, ", "), text);
}

inline std::string_view buffer_policy_name(BufferPolicy policy) {
  return kBufferPolicyNames[static_cast<std::size_t>(policy)];
}

// `auto` resolved for a strategy that is (or is not) asynchronous; the others as they are.
inline BufferPolicy resolve_buffer_policy(BufferPolicy policy, bool asynchronous) {
  if (policy != BufferPolicy::automatic) return policy;
  return asynchronous ? BufferPolicy::local : BufferPolicy::broadcast;
}

}  // namespace fast::torch
