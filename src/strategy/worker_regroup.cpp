// Worker's side of elastic synchronous training (docs/faults.md, "Elastic synchronous training"):
// which strategies may go on without a lost worker, and the regrouping of the survivors.

#include <algorithm>
#include <cstddef>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/collective/membership.hpp"
#include "fast/core/error.hpp"
#include "fast/strategy/registry.hpp"
#include "fast/strategy/worker.hpp"

namespace fast::strategy {

std::string elastic_refusal(const StrategyOptions& options) {
  const StrategyRegistration r = find_registration(options.name);
  if (r.asynchronous.holds(options)) {
    const std::string condition = r.asynchronous.condition_for(options);
    return fmt::format("strategy '{}'{} is asynchronous: its survivors always go on without a lost worker",
                       options.name, condition.empty() ? "" : " " + condition);
  }
  if (!r.elastic) {
    std::vector<std::string> elastic;
    for (const auto& [name, summary] : strategy_summaries())
      if (find_registration(name).elastic) elastic.push_back(name);
    return fmt::format("strategy '{}' cannot go on without a lost worker; elastic training supports {}", options.name,
                       elastic.empty() ? std::string("none") : fmt::format("{}", fmt::join(elastic, ", ")));
  }
  return r.elastic(options);
}

Regrouping Worker::regroup_survivors() {
  FAST_ENFORCE_AS(core::InvalidUsage, comm_.elastic(),
                  "Worker::regroup_survivors: the communicator is not elastic (WorkerOptions::communicator.elastic)");
  FAST_ENFORCE_AS(core::InvalidUsage, !finished_, "Worker::regroup_survivors: called after finish()");
  Regrouping out;
  for (;;) {
    ++out.agreements;
    const collective::SurvivorAgreement a = collective::agree_on_survivors(comm_, steps_, membership_rounds_);
    comm_.regroup(a.members, a.next_sequence);
    // The most steps, the lowest rank among them: a step that a survivor completed stands.
    const auto most = std::max_element(a.progress.begin(), a.progress.end());
    out.source = a.members[static_cast<std::size_t>(most - a.progress.begin())];
    out.members = a.members;
    out.lost.insert(out.lost.end(), a.lost.begin(), a.lost.end());
    try {
      take_state_of(out.source);
    } catch (const core::PeerLost&) {
      comm_.context().ensure_alive(comm_.rank());  // this worker itself lost: that error instead
      continue;                                    // another loss meanwhile: agree again
    }
    strategy_->regrouped(state_);
    out.steps = steps_;
    out.rounds = membership_rounds_;
    std::sort(out.lost.begin(), out.lost.end());
    out.lost.erase(std::unique(out.lost.begin(), out.lost.end()), out.lost.end());
    return out;
  }
}

namespace {

// The tags of a join (agreement rounds use sequence >= 1, detail 0): the header, then the state.
constexpr runtime::Tag kJoinHeader = runtime::make_tag(runtime::TagKind::membership, 0, 1);
constexpr runtime::Tag kJoinState = runtime::make_tag(runtime::TagKind::membership, 0, 2);

}  // namespace

Regrouping Worker::admit(int joiner) {
  FAST_ENFORCE_AS(core::InvalidUsage, comm_.elastic() && !finished_,
                  "Worker::admit: needs an elastic communicator, before finish()");
  std::vector<int> members = comm_.members();
  FAST_ENFORCE_AS(core::InvalidUsage,
                  joiner >= 0 && joiner < comm_.size() && !std::binary_search(members.begin(), members.end(), joiner),
                  "Worker::admit: worker {} is not a rank outside the group", joiner);
  const int source = members.front();
  members.insert(std::upper_bound(members.begin(), members.end(), joiner), joiner);
  const std::uint32_t sequence = comm_.next_sequence_number();  // the same on every member
  if (comm_.rank() == source) {
    std::vector<std::int64_t> header{sequence, membership_rounds_};
    header.insert(header.end(), members.begin(), members.end());
    const std::vector<std::byte> state = encode_checkpoint(save());
    runtime::Context& ctx = comm_.own_context();
    core::Work sent = ctx.send(joiner, kJoinHeader, core::ConstView(std::span<const std::int64_t>(header)));
    ctx.send(joiner, kJoinState, core::ConstView(state.data(), state.size(), core::DType::u8)).wait();
    sent.wait();
  }
  comm_.regroup(members, sequence);
  strategy_->regrouped(state_);
  return {.members = members, .source = source, .steps = steps_, .rounds = membership_rounds_};
}

Regrouping Worker::join_group() {
  FAST_ENFORCE_AS(core::InvalidUsage, comm_.elastic() && comm_.joining() && !finished_,
                  "Worker::join_group: needs an elastic communicator in joining mode, before finish()");
  runtime::Context& ctx = comm_.own_context();
  core::Buffer header;
  int source = -1;
  ctx.recv_any(kJoinHeader, header, source).wait();
  core::Buffer state;
  ctx.recv(source, kJoinState, state).wait();
  const std::span<const std::int64_t> h = std::as_const(header).as<std::int64_t>();  // checks the dtype
  FAST_ENFORCE_AS(core::InvalidArgument, h.size() >= 3, "join: worker {} sent a header of {} integers, expected >= 3",
                  source, h.size());
  const std::string from = fmt::format("the state of worker {}", source);
  const std::span<const std::uint8_t> raw = std::as_const(state).as<std::uint8_t>();
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(raw.data()), raw.size());
  restore(decode_checkpoint(bytes, from), from);
  membership_rounds_ = static_cast<std::uint32_t>(h[1]);
  comm_.end_join();
  comm_.regroup(std::vector<int>(h.begin() + 2, h.end()), static_cast<std::uint32_t>(h[0]));
  strategy_->regrouped(state_);
  return {.members = comm_.members(), .source = source, .steps = steps_, .rounds = membership_rounds_};
}

void Worker::take_state_of(int source) {
  std::vector<std::byte> bytes;
  if (comm_.rank() == source) bytes = encode_checkpoint(save());
  std::int64_t length = static_cast<std::int64_t>(bytes.size());
  comm_.broadcast(core::MutableView(&length, 1, core::DType::i64), source);
  bytes.resize(static_cast<std::size_t>(length));
  comm_.broadcast(core::MutableView(bytes.data(), bytes.size(), core::DType::u8), source);
  if (comm_.rank() == source) return;
  const std::string from = fmt::format("the state of worker {}", source);
  restore(decode_checkpoint(bytes, from), from);
}

}  // namespace fast::strategy
