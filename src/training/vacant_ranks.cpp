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

bool first_holder(const runtime::Context& ctx, int worker) {
  const std::vector<runtime::MembershipEvent> events = ctx.membership_events();
  return started_vacant(ctx, worker) &&
         std::ranges::count_if(events, [worker](const auto& e) { return e.joined && e.worker == worker; }) == 1;
}

void leave_out_vacant_ranks(runtime::Context& ctx, strategy::Worker& worker, int min_workers) {
  if (ctx.joins_run_under_way()) return;
  // Every rank vacant at the start, taken since or not: a process that took one before this point
  // waits to be admitted, as any newcomer does.
  std::vector<int> vacant;
  for (int r = 0; r < ctx.size(); ++r)
    if (started_vacant(ctx, r)) vacant.push_back(r);
  if (vacant.empty()) return;
  const int starting = ctx.size() - static_cast<int>(vacant.size());
  FAST_ENFORCE(min_workers <= starting,
               "min_workers: expected at most the {} workers the run starts with ({} of max_workers {} are vacant), "
               "got {} (the run could never start)",
               starting, vacant.size(), ctx.size(), min_workers);
  worker.leave_out(vacant);
  if (ctx.rank() == worker.communicator().members().front())
    core::log(core::LogLevel::info,
              "elastic: the run starts with {} of {} workers; ranks {} join when processes take them", starting,
              ctx.size(), fmt::join(vacant, ", "));
}

}  // namespace fast::training
