#include "vacant_ranks.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"

namespace fast::training {

std::vector<int> vacant_ranks(const runtime::Context& ctx) {
  std::vector<int> vacant;
  for (const runtime::MembershipEvent& e : ctx.membership_events()) {
    if (e.vacant) vacant.push_back(e.worker);
    if (e.joined) std::erase(vacant, e.worker);  // a process took it
  }
  std::ranges::sort(vacant);
  vacant.erase(std::unique(vacant.begin(), vacant.end()), vacant.end());
  return vacant;
}

bool started_vacant(const runtime::Context& ctx, int worker) {
  return std::ranges::any_of(ctx.membership_events(),
                             [worker](const runtime::MembershipEvent& e) { return e.vacant && e.worker == worker; });
}

void leave_out_vacant_ranks(runtime::Context& ctx, strategy::Worker& worker, int min_workers) {
  if (ctx.joins_run_under_way()) return;
  const std::vector<int> vacant = vacant_ranks(ctx);
  if (vacant.empty()) return;
  const int starting = ctx.size() - static_cast<int>(vacant.size());
  FAST_ENFORCE(min_workers <= starting,
               "min_workers: expected at most the {} workers the run starts with ({} ranks of max_workers {} are "
               "vacant), got {} (the run could never start)",
               starting, vacant.size(), ctx.size(), min_workers);
  const strategy::Regrouping g = worker.regroup_survivors(0);
  if (ctx.rank() != g.members.front()) return;
  core::log(core::LogLevel::info,
            "elastic: the run starts with {} of {} workers; ranks {} join when processes take them", g.members.size(),
            ctx.size(), fmt::join(vacant, ", "));
  // A starting worker lost before the first step is a loss like any other.
  std::vector<int> lost;
  std::ranges::set_difference(g.lost, vacant, std::back_inserter(lost));
  if (!lost.empty())
    core::log(core::LogLevel::warn, "elastic: worker(s) {} lost before the first step; {} workers start",
              fmt::join(lost, ", "), g.members.size());
}

}  // namespace fast::training
