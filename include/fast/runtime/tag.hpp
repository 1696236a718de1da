#pragma once
// Message tags. A point-to-point message is matched by (source rank, destination rank, tag), in
// the order sent. Concurrent operations must use different tags. Bit layout of a Tag:
//
//   bits 63..56  kind      who owns the tag space (TagKind below)
//   bits 55..24  sequence  the owner's operation counter (wraps at 2^32)
//   bits 23..0   detail    the owner's own use (a chunk index, a step within the operation)
//
// Each layer that sends builds its tags with make_tag and documents its use of `detail` next to
// the code.

#include <cstdint>

namespace fast::runtime {

using Tag = std::uint64_t;

enum class TagKind : std::uint8_t {
  user = 0,        // tags chosen by library users through the tensor mover
  collective = 1,  // collective/ algorithms
  strategy = 2,    // strategy/ exchanges
  window = 3,      // one-sided windows
  control = 4,     // runtime control messages
  trainer = 5,     // training loops (reserved: unused since fast train agrees on stops with a collective)
  membership = 6,  // the survivors' agreement of an elastic group (collective/membership.hpp)
};

constexpr Tag make_tag(TagKind kind, std::uint32_t sequence, std::uint32_t detail) {
  return (static_cast<Tag>(kind) << 56) | (static_cast<Tag>(sequence) << 24) | (static_cast<Tag>(detail) & 0xFFFFFFu);
}
constexpr TagKind tag_kind(Tag tag) { return static_cast<TagKind>(tag >> 56); }
constexpr std::uint32_t tag_sequence(Tag tag) { return static_cast<std::uint32_t>((tag >> 24) & 0xFFFFFFFFu); }
constexpr std::uint32_t tag_detail(Tag tag) { return static_cast<std::uint32_t>(tag & 0xFFFFFFu); }
inline constexpr std::uint32_t kMaxTagDetail = 0xFFFFFFu;

}  // namespace fast::runtime
