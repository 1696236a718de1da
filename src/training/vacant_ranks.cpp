#include "vacant_ranks.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"

namespace fast::training {

std::vector<int> started_vacant(const runtime::Context& ctx) {
  std::vector<int> vacant;
  for (const runtime::MembershipEvent& e : ctx.membership_events())
    if (e.vacant) vacant.push_back(e.worker);
  std::ranges::sort(vacant);
  vacant.erase(std::unique(vacant.begin(), vacant.end()), vacant.end());
  return vacant;
}

std::vector<int> vacant_ranks(const runtime::Context& ctx) {
  std::vector<int> vacant = started_vacant(ctx);
  for (const runtime::MembershipEvent& e : ctx.membership_events())
    if (e.joined) std::erase(vacant, e.worker);  // a process took it
  return vacant;
}

bool first_holder(const runtime::Context& ctx, int worker) {
  const std::vector<runtime::MembershipEvent> events = ctx.membership_events();
  const auto is = [worker](bool vacant, bool joined) {
    return [=](const runtime::MembershipEvent& e) {
      return e.worker == worker && e.vacant == vacant && e.joined == joined;
    };
  };
  return std::ranges::any_of(events, is(true, false)) && std::ranges::count_if(events, is(false, true)) == 1;
}

void leave_out_vacant_ranks(runtime::Context& ctx, strategy::Worker& worker, int min_workers) {
  if (ctx.joins_run_under_way()) return;
  // Every rank vacant at the start, taken since or not: a process that took one before this point
  // waits to be admitted, as any newcomer does.
  const std::vector<int> vacant = started_vacant(ctx);
  if (vacant.empty()) return;
  const int starting = ctx.size() - static_cast<int>(vacant.size());
  FAST_ENFORCE(min_workers <= starting,
               "min_workers: expected at most the {} workers the run starts with ({} of max_workers {} are vacant), "
               "got {} (the run could never start)",
               starting, vacant.size(), ctx.size(), min_workers);
  worker.leave_out(vacant);
  if (ctx.rank() == worker.communicator().members().front())
    core::log(core::LogLevel::info, "elastic: the run starts with {} of {} workers; {} {} {}", starting, ctx.size(),
              vacant.size() == 1 ? "rank" : "ranks", fmt::join(vacant, ", "),
              vacant.size() == 1 ? "joins when a process takes it" : "join when processes take them");
}

}  // namespace fast::training
