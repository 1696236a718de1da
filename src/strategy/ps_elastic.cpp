// Strategy `ps` in an elastic group (include/fast/strategy/ps.hpp, "Elastic groups"): the replica
// of the servers' state that every worker keeps, and the placement of the servers on the members
// after the group changed.

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/strategy/optimizer_state.hpp"
#include "fast/strategy/ps.hpp"
#include "ps_server.hpp"

namespace fast::strategy {

void PsStrategy::size_staged() {
  const std::size_t buffers = replica_->state_buffers();
  staged_.resize(static_cast<std::size_t>(servers_));
  for (std::size_t k = 0; k < staged_.size(); ++k)
    staged_[k].assign(ps_protocol::elastic_reply_floats(offsets_[k + 1] - offsets_[k], buffers), 0.0f);
}

// Once every server replied: each reply's shard into the parameters, its optimizer state into the
// replica. The step counts agree (every server stepped in the same rounds: the finite flags are
// the workers', sent to every server); the last server's is taken.
void PsStrategy::take_replies(std::span<float> params) {
  const std::vector<std::span<float>> state = replica_->state();
  std::int64_t steps = 0;
  for (int k = 0; k < servers_; ++k) {
    const auto ku = static_cast<std::size_t>(k);
    const std::size_t n = offsets_[ku + 1] - offsets_[ku];
    auto at = staged_[ku].cbegin();
    std::copy_n(at, n, shard_of(params, k).begin());
    at += static_cast<std::ptrdiff_t>(n);
    for (const std::span<float> buffer : state) {
      std::copy_n(at, n, buffer.begin() + static_cast<std::ptrdiff_t>(offsets_[ku]));
      at += static_cast<std::ptrdiff_t>(n);
    }
    std::memcpy(&steps, &*at, sizeof steps);
  }
  replica_->set_steps_taken(steps);
}

// Every member, at the same point of the group's collective sequence, with the same replica and
// clock: K = min(servers, members) shards on the first K members, each server built from the
// replica (no window: ps.hpp, "Elastic groups").
void PsStrategy::place_servers(std::span<float> params) {
  stop_server();
  server_.reset();
  replace_servers_ = false;
  ++generation_;
  const std::vector<int> members = comm_.members();
  servers_ = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(options_.servers), members.size()));
  size_shards(params.size());
  server_rank_.assign(members.begin(), members.begin() + servers_);
  const auto mine = std::ranges::find(server_rank_, comm_.rank());
  my_shard_ = mine == server_rank_.end() ? -1 : static_cast<int>(mine - server_rank_.begin());
  size_staged();
  make_server(params);
  if (server_) {  // not yet serving: its optimizer is this worker's alone
    const std::vector<std::span<float>> from = replica_->state();
    const std::vector<std::span<float>> to = server_->optimizer().state();
    const auto ku = static_cast<std::size_t>(my_shard_);
    for (std::size_t b = 0; b < from.size(); ++b)
      std::copy_n(from[b].begin() + static_cast<std::ptrdiff_t>(offsets_[ku]), to[b].size(), to[b].begin());
    server_->optimizer().set_steps_taken(replica_->steps_taken());
    server_->start_elastic(clock_, members);
  }
  open_shards();
  if (comm_.rank() == members.front())  // one line per placement, as the group's other elastic records
    core::log(core::LogLevel::info, "ps: {} server(s) placed on workers {} from step {} (the copy of their state)",
              servers_, fmt::format("{}", fmt::join(server_rank_, ", ")), clock_);
}

void PsStrategy::regrouped(ModelState state) {
  if (!elastic_) return;
  place_servers(state.params);
}

void PsStrategy::save_replica(Checkpoint& out) const {
  save_optimizer("ps.replica.optimizer", *replica_, out);
  out.integers.insert_or_assign("ps.clock", clock_);
  out.integers.insert_or_assign("ps.generation", generation_);
}

void PsStrategy::restore_replica(const Checkpoint& checkpoint, std::string_view source) {
  SavedOptimizer replica("ps.replica.optimizer", checkpoint, source, *replica_);  // checked first
  const std::int64_t clock = checkpoint.integer("ps.clock", 0, std::numeric_limits<std::int64_t>::max(), source);
  const std::int64_t generation =
      checkpoint.integer("ps.generation", 0, std::numeric_limits<std::uint32_t>::max(), source);
  replica.apply();
  clock_ = clock;
  generation_ = static_cast<std::uint32_t>(generation);
  replace_servers_ = true;  // regrouped() or the next step() places them
}

}  // namespace fast::strategy
