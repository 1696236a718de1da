// Worker's side of elastic synchronous training (docs/faults.md, "Elastic synchronous training"):
// which strategies may go on without a lost worker, and the regrouping of the survivors.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

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
    return fmt::format("strategy '{}'{} is asynchronous: its survivors go on without a lost worker, elastic or not",
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

std::string elastic_group_warning(const StrategyOptions& options, int smallest, int largest) {
  const StrategyRegistration r = find_registration(options.name);
  if (!r.elastic_group) return {};
  std::vector<int> refused;
  std::string first_reason;
  for (int group = std::max(smallest, 1); group <= largest; ++group)
    if (std::string why = r.elastic_group(options, group); !why.empty()) {
      refused.push_back(group);
      if (first_reason.empty()) first_reason = std::move(why);
    }
  if (refused.empty()) return {};
  // The sizes as ranges ("3, 5-7"): a run of hundreds of workers may refuse most sizes.
  std::vector<std::string> ranges;
  for (std::size_t i = 0; i < refused.size();) {
    std::size_t j = i;
    while (j + 1 < refused.size() && refused[j + 1] == refused[j] + 1) ++j;
    ranges.push_back(j == i ? fmt::format("{}", refused[i]) : fmt::format("{}-{}", refused[i], refused[j]));
    i = j + 1;
  }
  return fmt::format(
      "strategy '{}' cannot go on as a group of {} worker(s) ({}): a loss or join that makes such a "
      "group ends the run (exit code 5); a topology that fits every size (ring, complete, "
      "exponential, ...) avoids it, or min_workers above {}",
      options.name, fmt::join(ranges, ", "), first_reason, refused.back());
}

Regrouping Worker::regroup_survivors(int stage) {
  FAST_ENFORCE_AS(core::InvalidUsage, comm_.elastic(),
                  "Worker::regroup_survivors: the communicator is not elastic (WorkerOptions::communicator.elastic)");
  FAST_ENFORCE_AS(core::InvalidUsage, !finished_, "Worker::regroup_survivors: called after finish()");
  FAST_ENFORCE_AS(core::InvalidUsage, stage >= 0 && stage < kRegroupStages,
                  "Worker::regroup_survivors: stage: expected 0 to {}, got {}", kRegroupStages - 1, stage);
  Regrouping out;
  for (;;) {
    ++out.agreements;
    // The progress proposed: the steps, then the stage (members with as many steps hold the same state).
    const collective::SurvivorAgreement a =
        collective::agree_on_survivors(comm_, steps_ * kRegroupStages + stage, membership_rounds_);
    comm_.regroup(a.members, a.next_sequence);
    // The most steps, the lowest rank among them: a step that a survivor completed stands.
    std::vector<std::int64_t> steps(a.progress.size());
    std::ranges::transform(a.progress, steps.begin(), [](std::int64_t p) { return p / kRegroupStages; });
    const auto most = std::max_element(steps.begin(), steps.end());
    out.source = a.members[static_cast<std::size_t>(most - steps.begin())];
    std::vector<int> stages(a.progress.size());
    std::ranges::transform(a.progress, stages.begin(),
                           [](std::int64_t p) { return static_cast<int>(p % kRegroupStages); });
    out.stage = std::ranges::min(stages);
    out.highest_stage = std::ranges::max(stages);
    out.members = a.members;
    out.lost.insert(out.lost.end(), a.lost.begin(), a.lost.end());
    try {
      take_state_of(out.source);
      strategy_->forget_own_state(state_);  // the source's too: it may hold part of the failed step
      strategy_->regrouped(state_);         // may be collective (ps places its servers again)
    } catch (const core::PeerLost&) {
      comm_.context().ensure_alive(comm_.rank());  // this worker itself lost: that error instead
      continue;                                    // another loss meanwhile: agree again
    }
    out.steps = steps_;
    out.rounds = membership_rounds_;
    std::sort(out.lost.begin(), out.lost.end());
    out.lost.erase(std::unique(out.lost.begin(), out.lost.end()), out.lost.end());
    return out;
  }
}

void Worker::leave_out(const std::vector<int>& absent) {
  FAST_ENFORCE_AS(core::InvalidUsage, comm_.elastic() && steps_ == 0 && !finished_,
                  "Worker::leave_out: needs an elastic communicator and no step taken yet");
  FAST_ENFORCE_AS(core::InvalidUsage, !std::ranges::binary_search(absent, comm_.rank()),
                  "Worker::leave_out: worker {} leaves itself out", comm_.rank());
  std::vector<int> members;
  for (int r : comm_.members())
    if (!std::ranges::binary_search(absent, r)) members.push_back(r);
  // Formed at 0, as at construction: a starting member lost during the set-up (taken back since
  // or not) still counts as lost since the group formed, so the first collective finds it.
  comm_.regroup(std::move(members), comm_.next_sequence_number(), 0.0);
  strategy_->regrouped(state_);  // may be collective (ps places its servers), among the members left
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
