#include "fast/collective/choco_gossip.hpp"

#include "fast/core/buffer.hpp"
#include "fast/core/error.hpp"
#include "fast/core/random.hpp"
#include "fast/core/saved_state.hpp"

namespace fast::collective {

using core::Buffer;
using core::Work;

ChocoGossip::ChocoGossip(Communicator& comm, std::size_t n, std::vector<int> in_neighbors,
                         std::vector<double> in_weights, std::vector<int> out_neighbors, double self_weight,
                         ChocoOptions options)
    : comm_(comm),
      n_(n),
      in_(std::move(in_neighbors)),
      in_weights_(std::move(in_weights)),
      out_(std::move(out_neighbors)),
      self_weight_(self_weight),
      options_(std::move(options)) {
  FAST_ENFORCE_EQ(in_.size(), in_weights_.size(), "ChocoGossip: one weight per in-neighbour");
  FAST_ENFORCE(options_.gamma > 0 && options_.gamma <= 1, "ChocoGossip: gamma must be in (0, 1], got {}",
               options_.gamma);
  for (int p : in_) runtime::check_peer(comm.context(), p, "ChocoGossip in-neighbour");
  for (int p : out_) runtime::check_peer(comm.context(), p, "ChocoGossip out-neighbour");
  const std::uint64_t seed = core::worker_seed(options_.seed, static_cast<std::uint64_t>(comm.rank()));
  self_ = std::make_unique<compress::DeltaSender>(compress::make_codec(options_.codec, seed, options_.layout), n_,
                                                  options_.initial);
  for (std::size_t k = 0; k < in_.size(); ++k)
    peers_.push_back(std::make_unique<compress::DeltaReceiver>(compress::make_codec(options_.codec, 0, options_.layout),
                                                               n_, options_.initial));
}

ChocoGossip::~ChocoGossip() = default;

std::span<const float> ChocoGossip::public_copy() const noexcept { return self_->reference(); }

void ChocoGossip::save(std::string_view prefix, core::SavedState& out) const {
  self_->save(fmt::format("{}.self", prefix), out);
  for (std::size_t k = 0; k < in_.size(); ++k) peers_[k]->save(fmt::format("{}.from.{}", prefix, in_[k]), out);
}

void ChocoGossip::restore(std::string_view prefix, const core::SavedState& in, std::string_view source) {
  for (std::size_t k = 0; k < in_.size(); ++k)  // every copy read before any changes
    (void)in.array(fmt::format("{}.from.{}.reference", prefix, in_[k]), n_, source);
  self_->restore(fmt::format("{}.self", prefix), in, source);
  for (std::size_t k = 0; k < in_.size(); ++k)
    peers_[k]->restore(fmt::format("{}.from.{}", prefix, in_[k]), in, source);
}

void ChocoGossip::mix(std::span<float> x) {
  FAST_ENFORCE_EQ(x.size(), n_, "ChocoGossip::mix: tensor length");
  runtime::Context& ctx = comm_.context();
  const auto tag = runtime::make_tag(runtime::TagKind::collective, comm_.reserve_sequence(), 0);
  Buffer payload;
  self_->encode(core::ConstView(std::span<const float>(x)), payload, options_.meter);
  std::vector<Work> sends;
  std::vector<Buffer> received(in_.size());
  std::vector<Work> recvs;
  for (std::size_t k = 0; k < in_.size(); ++k) recvs.push_back(ctx.recv(in_[k], tag, received[k]));
  for (int p : out_) sends.push_back(ctx.send(p, tag, payload.view()));
  core::wait_all(recvs);
  core::wait_all(sends);
  // Every payload is validated (decode throws before changing a reference) before x changes.
  std::vector<double> mixed(n_, 0.0);
  const std::span<const float> own = self_->reference();
  for (std::size_t i = 0; i < n_; ++i) mixed[i] = (self_weight_ - 1.0) * own[i];
  for (std::size_t k = 0; k < in_.size(); ++k) {
    const std::span<const float> ref = peers_[k]->decode(received[k].view());
    const double w = in_weights_[k];
    for (std::size_t i = 0; i < n_; ++i) mixed[i] += w * ref[i];
  }
  const double gamma = options_.gamma;
  for (std::size_t i = 0; i < n_; ++i) x[i] = static_cast<float>(x[i] + gamma * mixed[i]);
}

}  // namespace fast::collective
