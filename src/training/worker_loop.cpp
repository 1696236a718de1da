#include "worker_loop.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>

#include <fmt/ranges.h>

#include "fast/core/counted.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/core/stop_request.hpp"
#include "vacant_ranks.hpp"

namespace fast::training {

namespace {
// exit-while-agreeing (StrategyOptions::fault_inject), called once this member's first message of
// the agreement to admit `joiner` left: half a second later (that message then reached its member,
// the others wait for the rest) the process kills itself, as a crash would, so the agreement's
// all-gather completes on some members only.
[[noreturn]] void exit_while_agreeing(runtime::Context& ctx, int joiner) {
  ctx.sleep(0.5);
  strategy::FaultInjection::kill_process(fmt::format(
      "worker {} kills itself inside the agreement to admit worker {} (exit-while-agreeing)", ctx.rank(), joiner));
}
}  // namespace

WorkerLoop::WorkerLoop(runtime::Context& ctx, strategy::Worker& worker, runtime::Slowdown& slowdown, ModelSide& model,
                       ProcessOutputs& outputs, const LoopPlan& plan)
    : ctx_(ctx),
      worker_(worker),
      slowdown_(slowdown),
      model_(model),
      outputs_(outputs),
      plan_(plan),
      start_(ctx.now()),
      last_report_(start_),
      divergence_(ctx.rank(), plan.initial_norm, plan.classes) {}

void WorkerLoop::check(const std::optional<metrics::DivergenceSign>& sign) {
  if (sign) outputs_.diverged(*sign, plan_.stop_on_divergence);
}

bool WorkerLoop::evaluate_periodic(std::int64_t step) {
  const double time = ctx_.now();
  const metrics::EvalRecord record = evaluate_collective(step, false, false);
  const double off_clock = ctx_.now() - time;
  check(divergence_.on_evaluation(record.step, record.accuracy, record.loss, record.param_norm));
  const bool stop = stop_for_divergence();
  if (lead() && stop)
    count_eval(record, time, off_clock);  // unwritten, but it took its time off the training clock
  else if (lead())
    record_eval(record, time, off_clock);
  return stop;
}

// Every worker calls it after the same collective evaluation: one all-reduce of a flag, so all
// stop at the same step (a NaN training loss seen by one worker stops them all).
bool WorkerLoop::stop_for_divergence() {
  if (!plan_.stop_on_divergence) return false;
  std::vector<double> flag{divergence_.diverged() ? 1.0 : 0.0};
  worker_.communicator().allreduce(core::MutableView(std::span<double>(flag)));
  stopped_for_divergence_ = flag[0] > 0;
  return stopped_for_divergence_;
}

bool WorkerLoop::stop_agreed(std::int64_t done) {
  if (!plan_.stoppable || done % plan_.stop_check_every != 0 || done >= plan_.total_steps) return false;
  const double mine = static_cast<double>(core::stop_requested());
  collective::Communicator& comm = worker_.communicator();
  std::vector<double> seen(static_cast<std::size_t>(comm.group_size()));
  comm.allgather(core::ConstView(std::span<const double>(&mine, 1)), core::MutableView(std::span<double>(seen)));
  const double signal = *std::max_element(seen.begin(), seen.end());  // the same on every member
  if (signal == 0) return false;
  stopped_by_ = static_cast<int>(signal);
  return true;
}

bool WorkerLoop::stop_requested_here() {
  if (!plan_.stoppable || stopped_by_ != 0) return stopped_by_ != 0;
  stopped_by_ = core::stop_requested();
  return stopped_by_ != 0;
}

void WorkerLoop::checkpoint(std::int64_t done, bool again) {
  if (checkpoints_ == nullptr || (done == last_checkpoint_step_ && !again)) return;
  last_checkpoint_ = checkpoints_->write(worker_, done);
  last_checkpoint_step_ = done;
  if (lead()) core::log(core::LogLevel::info, "checkpoint: step {} written to '{}'", done, last_checkpoint_.string());
}

void WorkerLoop::checkpoint_asynchronous() {
  if (checkpoints_ == nullptr) return;
  collective::Communicator& comm = worker_.communicator();
  if (comm.group_size() != ctx_.size()) {  // the same on every member: exclude_lost() agreed on it
    if (ctx_.rank() == comm.members().front())
      core::log(core::LogLevel::warn,
                "checkpoint: none written: {} of {} workers were lost, and a resume needs every "
                "worker's model",
                ctx_.size() - comm.group_size(), ctx_.size());
    return;
  }
  std::vector<double> steps{static_cast<double>(worker_.steps())};
  comm.allreduce(core::MutableView(std::span<double>(steps)));
  checkpoint(static_cast<std::int64_t>(steps[0]) / ctx_.size());
}

void WorkerLoop::checkpoint_own(std::int64_t steps) {
  if (checkpoints_ == nullptr) return;
  if (checkpoints_->write_own(worker_, steps))
    core::log(core::LogLevel::info, "checkpoint: step {} complete in '{}' (worker {} wrote the last file)", steps,
              CheckpointStore::step_folder(checkpoints_->folder(), steps).string(), ctx_.rank());
}

strategy::StepReport WorkerLoop::train_step(std::int64_t epoch, std::int64_t index) {
  const double compute_start = slowdown_.active() ? ctx_.now() : 0.0;
  double loss = 0;
  if (model_.gradient_is_private()) {
    ctx_.compute_overlapped(plan_.flops_per_step, [&] { loss = model_.gradient(epoch, index); });
  } else {
    loss = model_.gradient(epoch, index);
    ctx_.compute(plan_.flops_per_step);
  }
  if (slowdown_.active()) slowdown_.after_compute(ctx_, ctx_.now() - compute_start);
  const strategy::StepReport report = worker_.step();
  model_.sync_buffers(worker_.communicator());
  record_step(loss, report, epoch);
  return report;
}

void WorkerLoop::record_step(double loss, const strategy::StepReport& report, std::int64_t epoch) {
  check(divergence_.on_train_loss(report.step + 1, loss));
  last_lr_ = report.lr;
  loss_sum_ += loss;
  ++loss_count_;
  log_loss_sum_ += loss;
  ++log_loss_count_;
  if ((report.step + 1) % plan_.log_every == 0) write_train_record(report.step + 1, epoch, report.lr);
}

void WorkerLoop::flush_train_record() {
  if (log_loss_count_ == 0) return;
  // The epoch of the last step taken (0-based, as record_step's): step `steps` ends epoch
  // (steps - 1) / steps_per_epoch.
  const std::int64_t steps = worker_.steps();
  write_train_record(steps, std::max<std::int64_t>(steps - 1, 0) / plan_.steps_per_epoch, last_lr_);
}

void WorkerLoop::write_train_record(std::int64_t steps, std::int64_t epoch, double lr) {
  const strategy::StalenessStats st = worker_.strategy().staleness();
  outputs_.write(metrics::to_json(
      metrics::TrainRecord{.time = elapsed(),
                           .worker = ctx_.rank(),
                           .step = steps,
                           .epoch = epoch,
                           .samples = steps * plan_.batch,
                           .loss = log_loss_count_ > 0 ? log_loss_sum_ / static_cast<double>(log_loss_count_) : 0.0,
                           .lr = lr,
                           .comm_seconds = worker_.comm_seconds(),
                           .bytes_sent = ctx_.bytes_sent(),
                           .skipped_steps = worker_.skipped_steps(),
                           .staleness_mean = st.mean(),
                           .staleness_max = st.max,
                           .slowdown_seconds = slowdown_.waited_seconds()}));
  log_loss_sum_ = 0;
  log_loss_count_ = 0;
}

void WorkerLoop::report_progress(std::int64_t done, std::int64_t epoch) {
  const double now = ctx_.now();
  const bool last = done >= plan_.total_steps;
  if (!lead() || (now - last_report_ < 0.25 && !last)) return;
  const double elapsed = now - start_;
  const std::int64_t here = done - plan_.first_step;  // steps of this run (a resumed one started later)
  // The group's size (a lockstep run that lost workers goes on with fewer).
  const double samples = static_cast<double>(here * plan_.batch * worker_.communicator().group_size());
  outputs_.progress({.step = std::min(done, plan_.total_steps),
                     .total_steps = plan_.total_steps,
                     .epoch = epoch,
                     .elapsed_seconds = elapsed,
                     .samples_per_second = samples / std::max(elapsed, 1e-9),
                     .loss = loss_count_ > 0 ? loss_sum_ / static_cast<double>(loss_count_) : 0.0,
                     .eta_seconds = elapsed / static_cast<double>(std::max<std::int64_t>(here, 1)) *
                                    static_cast<double>(std::max<std::int64_t>(plan_.total_steps - done, 0)),
                     .done = last});
  last_report_ = now;
  loss_sum_ = 0;
  loss_count_ = 0;
  record_membership();
}

int WorkerLoop::leading_rank() const { return lead_rank_ >= 0 ? lead_rank_ : worker_.communicator().members().front(); }

bool WorkerLoop::lead() const { return ctx_.rank() == leading_rank(); }

// Every worker of this process computes the same answer (first_rank_of_process).
void WorkerLoop::follow_lead() {
  const int first = first_rank_of_process(ctx_);
  const int lead = leading_rank();
  outputs_.set_lead(lead >= first && lead < first + std::max(1, ctx_.local_size()));
}

void WorkerLoop::set_lead_rank(int rank) {
  lead_rank_ = rank;
  follow_lead();
}

std::int64_t WorkerLoop::regroup_survivors(const core::PeerLost& lost) {
  const strategy::Regrouping g = regroup_at(lost, 0);
  report_regrouping(g, lost);
  others_ended_ = g.highest_stage > 0;
  return g.steps;
}

strategy::Regrouping WorkerLoop::regroup_at(const core::PeerLost& lost, int stage) {
  if (!plan_.elastic || !ctx_.alive(ctx_.rank())) throw lost;
  flush_train_record();
  strategy::Regrouping g = worker_.regroup_survivors(stage);
  for (int w : g.lost) {  // a rank taken back and lost again adds its second holder's steps
    const auto since = held_since_.find(w);
    lost_steps_[w] += g.steps - (since == held_since_.end() ? 0 : since->second);
    held_since_.erase(w);
  }
  follow_lead();  // worker 0 may be the one lost
  return g;
}

void WorkerLoop::report_regrouping(const strategy::Regrouping& g, const core::PeerLost& lost) {
  if (lead()) {
    const std::vector<runtime::MembershipEvent> events = ctx_.membership_events();
    for (int w : g.lost) {
      std::string detail;
      for (const runtime::MembershipEvent& e : events)
        if (e.worker == w && !e.joined) detail = e.detail;
      outputs_.write(metrics::to_json(metrics::MembershipRecord{.time = elapsed(),
                                                                .worker = w,
                                                                .joined = false,
                                                                .detail = detail,
                                                                .step = g.steps,
                                                                .workers = static_cast<int>(g.members.size())}));
    }
  }
  const int left = static_cast<int>(g.members.size());
  const bool below = left < plan_.min_workers && g.steps < plan_.total_steps;  // all steps taken: ended anyway
  if (below) below_min_workers_ = left;
  if (!lead()) return;
  const std::string who = fmt::format("elastic: worker(s) {} lost", fmt::join(g.lost, ", "));
  if (below)
    core::log(core::LogLevel::warn, "{}; {} left, below min_workers {}: the run ends at step {} of {} ({})", who,
              core::counted(left, "worker"), plan_.min_workers, g.steps, plan_.total_steps, lost.what());
  else
    core::log(core::LogLevel::warn, "{}; {} {} on from step {} with worker {}'s state ({})", who,
              core::counted(left, "worker"), left == 1 ? "goes" : "go", g.steps, g.source, lost.what());
}

void WorkerLoop::admit_joiners(std::int64_t done) {
  if (!plan_.elastic || done % plan_.stop_check_every != 0 || done >= plan_.total_steps) return;
  collective::Communicator& comm = worker_.communicator();
  const std::vector<int>& members = comm.members();
  double mine = -1;
  for (int r = 0; r < ctx_.size() && mine < 0; ++r)
    if (!std::binary_search(members.begin(), members.end(), r) && ctx_.alive(r)) mine = r;
  std::vector<double> seen(static_cast<std::size_t>(comm.group_size()));
  const strategy::FaultInjection& fault = worker_.fault_injection();
  if (mine >= 0 && fault.exits_while_agreeing(ctx_.rank()) && !ctx_.joins_run_under_way())
    comm.after_next_send([this, joiner = static_cast<int>(mine)] { exit_while_agreeing(ctx_, joiner); });
  comm.allgather(core::ConstView(std::span<const double>(&mine, 1)), core::MutableView(std::span<double>(seen)));
  if (seen.front() < 0 || std::any_of(seen.begin(), seen.end(), [&](double v) { return v != seen.front(); })) return;
  const int joiner = static_cast<int>(seen.front());
  const bool leading = lead();  // records the admission, even of a joiner that leads from now on (rank 0)
  const bool was_vacant = first_holder(ctx_, joiner);  // a run that grows
  const std::optional<strategy::Regrouping> admitted = worker_.admit(joiner);
  if (admitted) {
    held_since_[joiner] = admitted->steps;
    follow_lead();
  }
  // Called off by the joiner (the first member was lost): the next collective fails on that loss.
  if (!admitted || !leading) return;
  const strategy::Regrouping& g = *admitted;
  outputs_.write(
      metrics::to_json(metrics::MembershipRecord{.time = elapsed(),
                                                 .worker = joiner,
                                                 .joined = true,
                                                 .detail = was_vacant ? "took a vacant rank" : "took its rank back",
                                                 .step = g.steps,
                                                 .workers = static_cast<int>(g.members.size())}));
  core::log(core::LogLevel::warn, "elastic: worker {} joined at step {}; {} go on", joiner, g.steps,
            core::counted(static_cast<long long>(g.members.size()), "worker"));
}

std::int64_t WorkerLoop::join_group() {
  const strategy::Regrouping g = worker_.join_group();
  joined_at_ = g.steps;
  follow_lead();
  core::log(core::LogLevel::warn, "elastic: worker {} joined the run at step {} of {} with worker {}'s state",
            ctx_.rank(), g.steps, plan_.total_steps, g.source);
  return g.steps;
}

void WorkerLoop::record_membership() {
  // Elastic lockstep runs write their changes where the survivors regroup (regroup_survivors).
  if (!lead() || plan_.elastic) return;
  const std::vector<runtime::MembershipEvent> events = ctx_.membership_events();
  for (; membership_seen_ < events.size(); ++membership_seen_) {
    const runtime::MembershipEvent& e = events[membership_seen_];
    if (e.before_join) continue;  // recorded by the process that saw it
    outputs_.write(metrics::to_json(
        metrics::MembershipRecord{.time = e.at - start_, .worker = e.worker, .joined = e.joined, .detail = e.detail}));
  }
}

// Writes the record, shows it (process of worker 0) and keeps it for the time to target.
// `taken_at` is when the evaluated model was taken (runtime clock).
void WorkerLoop::record_eval(metrics::EvalRecord record, double taken_at, double off_clock) {
  record.time = taken_at - start_;
  record.worker = ctx_.rank();
  outputs_.write(metrics::to_json(record));
  outputs_.evaluation({.epoch = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::ceil(record.epoch)) - 1),
                       .epochs_done = record.epoch,
                       .step = record.step,
                       .accuracy = record.accuracy,
                       .loss = record.loss});
  count_eval(record, taken_at, off_clock);
}

void WorkerLoop::count_eval(const metrics::EvalRecord& record, double taken_at, double off_clock) {
  evaluations_.push_back({.model_time = taken_at - start_,
                          .end_time = elapsed(),
                          .off_clock = off_clock,
                          .accuracy = record.accuracy,
                          .rank = ctx_.rank()});
}

// A collective evaluation pauses every worker for its whole length: all of it comes off the
// training clock.
metrics::EvalRecord WorkerLoop::evaluate_collective(std::int64_t step, bool final_round, bool write) {
  const double time = ctx_.now();
  metrics::EvalRecord record = model_.evaluate(final_round);
  record.step = step;
  record.epoch = static_cast<double>(step) / static_cast<double>(plan_.steps_per_epoch);
  if (write) write_evaluation(record, time, ctx_.now() - time);
  return record;
}

void WorkerLoop::write_evaluation(const metrics::EvalRecord& record, double taken_at, double off_clock) {
  // Every worker holds the same record: each checks it, so all agree on stopping.
  check(divergence_.on_evaluation(record.step, record.accuracy, record.loss, record.param_norm));
  if (lead()) record_eval(record, taken_at, off_clock);
}

// A snapshot evaluation pauses one worker of W: 1/W of its length comes off the training clock.
void WorkerLoop::evaluate_snapshot(double rounds) {
  const double time = ctx_.now();
  metrics::EvalRecord record = model_.snapshot();
  record.step = static_cast<std::int64_t>(rounds);
  record.epoch = rounds / static_cast<double>(plan_.steps_per_epoch);
  check(divergence_.on_evaluation(record.step, record.accuracy, record.loss, record.param_norm));
  record_eval(record, time, (ctx_.now() - time) / ctx_.size());
}

WorkerTotals WorkerLoop::totals() const {
  WorkerTotals t;
  t.steps = worker_.steps();
  t.joined_at = joined_at_;
  t.lost_steps = lost_steps_;
  t.skipped = worker_.skipped_steps();
  t.idle_seconds = worker_.comm_seconds();
  t.slowdown_seconds = slowdown_.waited_seconds();
  t.staleness = worker_.strategy().staleness();
  t.compression = worker_.strategy().compression();
  t.divergence = divergence_.sign();
  const auto world = static_cast<std::size_t>(ctx_.size());
  t.bytes_to.resize(world);
  t.bytes_from.resize(world);
  for (int p = 0; p < ctx_.size(); ++p) {
    const runtime::LinkStats link = ctx_.link_stats(p);
    t.bytes_to[static_cast<std::size_t>(p)] = link.bytes_sent;
    t.bytes_from[static_cast<std::size_t>(p)] = link.bytes_received;
  }
  return t;
}

}  // namespace fast::training
