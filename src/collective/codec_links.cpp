#include "codec_links.hpp"

#include <fmt/format.h>

#include <limits>

#include "fast/core/saved_state.hpp"

namespace fast::collective::detail {

namespace {
enum LinkKind : std::int64_t { kFeedback = 0, kSender = 1, kReceiver = 2 };

void save_key(const std::string& base, LinkKind kind, const CodecLinks::Key& key, core::SavedState& out) {
  const auto [peer, offset, count] = key;
  out.integers.insert_or_assign(base + ".kind", kind);
  out.integers.insert_or_assign(base + ".peer", peer);
  out.integers.insert_or_assign(base + ".offset", static_cast<std::int64_t>(offset));
  out.integers.insert_or_assign(base + ".count", static_cast<std::int64_t>(count));
}
}  // namespace

void CodecLinks::save(std::string_view prefix, core::SavedState& out) const {
  std::int64_t i = 0;
  auto base = [&] { return fmt::format("{}.link.{}", prefix, i++); };
  for (const auto& [key, ef] : feedback) {
    const std::string b = base();
    save_key(b, kFeedback, key, out);
    ef->save(b, out);
  }
  for (const auto& [key, sender] : senders) {
    const std::string b = base();
    save_key(b, kSender, key, out);
    sender->save(b, out);
  }
  for (const auto& [key, receiver] : receivers) {
    const std::string b = base();
    save_key(b, kReceiver, key, out);
    receiver->save(b, out);
  }
  out.integers.insert_or_assign(fmt::format("{}.links", prefix), i);
}

void CodecLinks::restore(std::string_view prefix, const core::SavedState& in, std::string_view source) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const std::int64_t links = in.integer(fmt::format("{}.links", prefix), 0, kMax, source);
  std::map<Key, std::unique_ptr<compress::ErrorFeedback>> new_feedback;
  std::map<Key, std::unique_ptr<compress::DeltaSender>> new_senders;
  std::map<Key, std::unique_ptr<compress::DeltaReceiver>> new_receivers;
  for (std::int64_t i = 0; i < links; ++i) {
    const std::string b = fmt::format("{}.link.{}", prefix, i);
    const auto kind = in.integer(b + ".kind", kFeedback, kReceiver, source);
    const Key key{static_cast<int>(in.integer(b + ".peer", 0, std::numeric_limits<int>::max(), source)),
                  static_cast<std::size_t>(in.integer(b + ".offset", 0, kMax, source)),
                  static_cast<std::size_t>(in.integer(b + ".count", 0, kMax, source))};
    // The references start at zeros: restore() overwrites them with the saved ones.
    if (kind == kFeedback) {
      auto ef = std::make_unique<compress::ErrorFeedback>(make(key, 0));
      ef->restore(b, in, source);
      new_feedback.emplace(key, std::move(ef));
    } else if (kind == kSender) {
      auto sender = std::make_unique<compress::DeltaSender>(make(key, 1), std::get<2>(key));
      sender->restore(b, in, source);
      new_senders.emplace(key, std::move(sender));
    } else {
      auto receiver = std::make_unique<compress::DeltaReceiver>(make(key, 2), std::get<2>(key));
      receiver->restore(b, in, source);
      new_receivers.emplace(key, std::move(receiver));
    }
  }
  feedback = std::move(new_feedback);
  senders = std::move(new_senders);
  receivers = std::move(new_receivers);
}

}  // namespace fast::collective::detail
