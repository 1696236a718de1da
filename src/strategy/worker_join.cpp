// Worker's side of a join in elastic synchronous training (docs/faults.md, "Elastic synchronous
// training"): the members admit a process that took a lost rank back, and the newcomer decides.
//
// The protocol, after the members agreed on the joiner J at a step boundary (sequence S: the
// sequence number of the group's next collective, the same on every member, and larger at every
// later admission):
//   1. every member sends J the header [S, rounds, source, members with J...]; the source (the
//      group's first member) also sends its state (Worker::save, encoded, after S);
//   2. J takes the first header of S larger than any it took before, then the header of S of every
//      other member it names and the source's state of S, watching every member named;
//   3. J sends every member one word: [S, ready] once it holds every header and the state, [S,
//      abort] when a member was lost before (the source, or any other), or when a header of a later
//      admission came first (J then takes that one);
//   4. a member waits for the word of S only, watching J alone: ready, or J lost without a word,
//      and it counts J in; abort, and it keeps its group. After an abort J waits for the next
//      admission.
// Every message carries S, so what an earlier attempt left behind (the headers J did not read, a
// word to a member whose agreement failed) is skipped. Every member thus leaves with the same
// group, or with groups that differ only by J where J is lost; and an abort means a member is
// lost, which every member's next collective sees (it is in every group), so the survivors regroup
// (Worker::regroup_survivors) as after any loss. Waiting for every member's header covers an
// agreement that completed on some members only (a loss inside its all-gather): the members whose
// all-gather failed send no header and regroup, so J never holds every header; it aborts once it
// sees the member lost in the all-gather (a member named in the header), and the members that
// completed it, which wait for J's word, keep their group and regroup with the others. Each wait
// ends with the loss of a peer it watches, never at the operation time limit (but J's wait for the
// first header: the next admission).

#include <signal.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/exit_code.hpp"
#include "fast/core/log.hpp"
#include "fast/core/stop_request.hpp"
#include "fast/runtime/time_limit.hpp"
#include "fast/strategy/worker.hpp"

namespace fast::strategy {

namespace {

// Whether a worker of another process than ctx's is alive (the workers of a process are
// consecutive ranks, local_size() of them).
bool another_process_alive(const runtime::Context& ctx) {
  const int first = ctx.rank() - ctx.rank() % ctx.local_size();
  for (int r = 0; r < ctx.size(); ++r)
    if ((r < first || r >= first + ctx.local_size()) && ctx.alive(r)) return true;
  return false;
}

// A worker of another process whose last change seen here is a loss other than a clean end (a
// process that ends cleanly leaves no event), or -1.
int crashed_worker(const runtime::Context& ctx) {
  const int first = ctx.rank() - ctx.rank() % ctx.local_size();
  std::vector<int> last(static_cast<std::size_t>(ctx.size()), 0);  // 1: lost, 2: joined, 0: nothing
  for (const runtime::MembershipEvent& e : ctx.membership_events())
    if (!e.before_join && e.worker >= 0 && e.worker < ctx.size())
      last[static_cast<std::size_t>(e.worker)] = e.joined ? 2 : 1;
  for (int r = 0; r < ctx.size(); ++r)
    if ((r < first || r >= first + ctx.local_size()) && last[static_cast<std::size_t>(r)] == 1) return r;
  return -1;
}

// Waits for `header` (an admission's header, posted by the caller), looking every fraction of a
// second whether the run stopped or ended meanwhile: a process that was not admitted has nothing
// to save, and the members, which end without it, wait for it to end. core::NotAdmitted then (exit
// code 0 when every other process ended cleanly); core::PeerLost when they were lost otherwise
// (the run died: fast launch --restart starts the group again); core::TimeoutError past the
// operation time limit.
void await_header(const runtime::Context& ctx, const core::Work& header) {
  constexpr double kLookSeconds = 0.2;
  const double deadline = ctx.now() + ctx.operation_time_limit();
  while (!header.wait(kLookSeconds)) {
    if (const int signal = core::stop_requested())
      throw core::NotAdmitted(fmt::format("interrupted by {} before worker {} joined the run: it has nothing to save",
                                          signal == SIGTERM ? "SIGTERM" : "SIGINT", ctx.rank()),
                              core::exit_code::killed_by(signal));
    if (!another_process_alive(ctx)) {
      const int crashed = crashed_worker(ctx);
      if (crashed >= 0)
        throw core::PeerLost(
            fmt::format("every other process of the run was lost before worker {} joined it (worker "
                        "{} among them, not by a clean end)",
                        ctx.rank(), crashed));
      throw core::NotAdmitted(fmt::format("the run ended before worker {} joined it (every other process ended): it "
                                          "has nothing to save",
                                          ctx.rank()),
                              core::exit_code::ok);
    }
    FAST_ENFORCE_AS(core::TimeoutError, ctx.now() < deadline,
                    "worker {} waited {} s (the operation time limit) for its admission to the run", ctx.rank(),
                    ctx.operation_time_limit());
  }
}

// The tags of a join (agreement rounds use sequence >= 1, detail 0): the header, the state, the word.
constexpr runtime::Tag kJoinHeader = runtime::make_tag(runtime::TagKind::membership, 0, 1);
constexpr runtime::Tag kJoinState = runtime::make_tag(runtime::TagKind::membership, 0, 2);
constexpr runtime::Tag kJoinWord = runtime::make_tag(runtime::TagKind::membership, 0, 3);
constexpr std::int64_t kReady = 1;
constexpr std::int64_t kAbort = 2;
// Word layout: sequence, kReady or kAbort. Header layout: sequence, rounds, source, then the
// members (rank order, the joiner among them).
constexpr std::size_t kHeaderFixed = 3;
// Seconds of runtime clock between two checks of the peer while a join waits.
constexpr double kSlice = 0.02;

// Posts an operation with `peer` (a send or receive of ctx); a peer already known lost makes the
// call itself throw PeerLost: that becomes a failed Work.
template <typename Post>
core::Work posted(Post&& post) {
  try {
    return post();
  } catch (const core::PeerLost&) {
    return core::Work::failed(std::current_exception());
  }
}

// Whether one of `peers` was lost since `since` (runtime::lost_since); the first such, or -1.
int first_lost(const runtime::Context& ctx, std::span<const int> peers, double since) {
  for (int p : peers)
    if (runtime::lost_since(ctx, p, since)) return p;
  return -1;
}

// Waits for `work`, an operation with `watched`'s first peer, in slices of kSlice seconds,
// watching every peer of `watched`. True when it completed; false when it failed with PeerLost or
// a watched peer was lost since `since` (the Work is then dropped, which cancels an unmatched
// receive). Other errors propagate; TimeoutError past the operation time limit (only when no
// watched peer answers or is seen lost).
bool settled(runtime::Context& ctx, core::Work& work, std::span<const int> watched, double since, const char* what) {
  const double start = ctx.now();
  const double limit = ctx.operation_time_limit();
  for (;;) {
    try {
      if (work.wait(kSlice)) return true;
    } catch (const core::PeerLost&) {
      return false;
    }
    if (first_lost(ctx, watched, since) >= 0) {
      work = core::Work();
      return false;
    }
    if (ctx.now() - start > limit)
      FAST_THROW(core::TimeoutError, "{}",
                 runtime::time_limit_message(fmt::format("join: {} with worker {}", what, watched.front()), limit));
  }
}
bool settled(runtime::Context& ctx, core::Work& work, const int& peer, double since, const char* what) {
  return settled(ctx, work, std::span<const int>(&peer, 1), since, what);
}

// Waits for the word of admission `sequence` from `joiner`, skipping older ones: kReady or kAbort,
// or nothing when the joiner was lost first.
std::optional<std::int64_t> word_of(runtime::Context& ctx, int joiner, std::uint32_t sequence, double since) {
  for (;;) {
    std::array<std::int64_t, 2> word{};
    core::Work heard =
        posted([&] { return ctx.recv(joiner, kJoinWord, core::MutableView(std::span<std::int64_t>(word))); });
    if (!settled(ctx, heard, joiner, since, "the joiner's word")) return std::nullopt;
    if (word[0] < sequence) continue;  // an earlier admission's, which this worker did not take part in
    FAST_ENFORCE_AS(core::InvalidArgument, word[0] == sequence && (word[1] == kReady || word[1] == kAbort),
                    "join: worker {} answered [{}, {}], expected [{}, {} (ready) or {} (abort)]", joiner, word[0],
                    word[1], sequence, kReady, kAbort);
    return word[1];
  }
}

// Receives the state of admission `sequence` from `source` (the bytes after its 8-byte stamp),
// skipping older ones, watching the source and `others`; nothing when one of them was lost first.
std::optional<core::Buffer> state_of(runtime::Context& ctx, int source, const std::vector<int>& others,
                                     std::uint32_t sequence, double since) {
  std::vector<int> watched{source};
  for (int m : others)
    if (m != source) watched.push_back(m);
  for (;;) {
    core::Buffer state;
    core::Work work = posted([&] { return ctx.recv(source, kJoinState, state); });
    if (!settled(ctx, work, watched, since, "the state")) return std::nullopt;
    const std::span<const std::uint8_t> raw = std::as_const(state).as<std::uint8_t>();  // checks the dtype
    std::int64_t stamp = -1;
    FAST_ENFORCE_AS(core::InvalidArgument, raw.size() >= sizeof stamp,
                    "join: worker {} sent a state of {} bytes, expected its 8-byte stamp first", source, raw.size());
    std::memcpy(&stamp, raw.data(), sizeof stamp);
    if (stamp < sequence) continue;
    FAST_ENFORCE_AS(core::InvalidArgument, stamp == sequence,
                    "join: worker {} sent the state of admission {}, expected {}", source, stamp, sequence);
    return state;
  }
}

// One header, checked: who sent it, what it says.
struct JoinHeader {
  std::uint32_t sequence = 0;
  std::uint32_t rounds = 0;
  int source = -1;
  std::vector<int> members;
};

JoinHeader parse_header(const core::Buffer& buffer, int from, int self, int world) {
  const std::span<const std::int64_t> h = buffer.as<std::int64_t>();  // checks the dtype
  FAST_ENFORCE_AS(core::InvalidArgument, h.size() > kHeaderFixed + 1,
                  "join: worker {} sent a header of {} integers, expected > {}", from, h.size(), kHeaderFixed + 1);
  JoinHeader out{.sequence = static_cast<std::uint32_t>(h[0]),
                 .rounds = static_cast<std::uint32_t>(h[1]),
                 .source = static_cast<int>(h[2]),
                 .members = std::vector<int>(h.begin() + kHeaderFixed, h.end())};
  bool sorted = true, has_self = false, has_source = false;
  for (std::size_t i = 0; i < out.members.size(); ++i) {
    const int m = out.members[i];
    sorted = sorted && m >= 0 && m < world && (i == 0 || out.members[i - 1] < m);
    has_self = has_self || m == self;
    has_source = has_source || m == out.source;
  }
  FAST_ENFORCE_AS(core::InvalidArgument, sorted && has_self && has_source && out.source != self,
                  "join: worker {} sent a group of {} members that is not ranks of [0, {}) in increasing order with "
                  "this worker {} and the source {} among them",
                  from, out.members.size(), world, self, out.source);
  return out;
}

// A header that a wait for the headers of one admission received from a later admission's member.
struct LaterHeader {
  core::Buffer header;
  int from = -1;
  std::uint32_t sequence = 0;  // its admission's
};

// Waits for the header of admission `h` from every member of `others` but `from` (who sent `h`),
// watching those it waits for; skips older headers. True once all came, each naming the same
// group, source and rounds as `h`; false when one of them was lost first (since `since`) or a
// header of a later admission came (kept in `later`). InvalidArgument for a malformed header or
// one that names another group.
bool headers_of(runtime::Context& ctx, const JoinHeader& h, int from, const std::vector<int>& others, double since,
                std::optional<LaterHeader>& later) {
  std::vector<int> missing = others;
  std::erase(missing, from);
  while (!missing.empty()) {
    core::Buffer buffer;
    int sender = -1;
    core::Work work = posted([&] { return ctx.recv_any(kJoinHeader, buffer, sender); });
    if (!settled(ctx, work, missing, since, "the members' headers")) return false;
    const JoinHeader g = parse_header(buffer, sender, ctx.rank(), ctx.size());
    if (g.sequence < h.sequence) continue;  // an earlier admission's
    if (g.sequence > h.sequence) {
      later = LaterHeader{std::move(buffer), sender, g.sequence};
      return false;
    }
    FAST_ENFORCE_AS(core::InvalidArgument, g.members == h.members && g.source == h.source && g.rounds == h.rounds,
                    "join: worker {} sent a header of admission {} that differs from worker {}'s (group, source "
                    "{} against {}, rounds {} against {})",
                    sender, g.sequence, from, g.source, h.source, g.rounds, h.rounds);
    std::erase(missing, sender);
  }
  return true;
}

// exit-while-admitting (StrategyOptions::fault_inject): the process kills itself, as a crash
// would, after kSettle seconds: the last messages of the agreement's all-gather then reach the
// other members, so the loss falls inside the admission (a loss inside the all-gather fails the
// agreement instead: no admission at all).
constexpr double kSettle = 0.5;
[[noreturn]] void exit_while_admitting(runtime::Context& ctx, int joiner) {
  ctx.sleep(kSettle);
  FaultInjection::kill_process(
      fmt::format("worker {} kills itself while admitting worker {} (exit-while-admitting)", ctx.rank(), joiner));
}

}  // namespace

std::optional<Regrouping> Worker::admit(int joiner) {
  FAST_ENFORCE_AS(core::InvalidUsage, comm_.elastic() && !finished_,
                  "Worker::admit: needs an elastic communicator, before finish()");
  std::vector<int> members = comm_.members();
  FAST_ENFORCE_AS(core::InvalidUsage,
                  joiner >= 0 && joiner < comm_.size() && !std::binary_search(members.begin(), members.end(), joiner),
                  "Worker::admit: worker {} is not a rank outside the group", joiner);
  runtime::Context& ctx = comm_.own_context();
  // A process that joined itself never fires it: the fault hits a member the run started with.
  if (fault_.exits_while_admitting(comm_.rank()) && !ctx.joins_run_under_way()) exit_while_admitting(ctx, joiner);
  const double since = ctx.now();
  const int source = members.front();
  members.insert(std::upper_bound(members.begin(), members.end(), joiner), joiner);
  const std::uint32_t sequence = comm_.next_sequence_number();  // the same on every member
  std::vector<std::int64_t> header{sequence, membership_rounds_, source};
  header.insert(header.end(), members.begin(), members.end());
  std::vector<std::byte> state(sizeof(std::int64_t));  // the stamp, then the checkpoint
  if (comm_.rank() == source) {
    const std::int64_t stamp = sequence;
    std::memcpy(state.data(), &stamp, sizeof stamp);
    const std::vector<std::byte> checkpoint = encode_checkpoint(save());
    state.insert(state.end(), checkpoint.begin(), checkpoint.end());
  }
  std::vector<core::Work> sent;
  sent.push_back(
      posted([&] { return ctx.send(joiner, kJoinHeader, core::ConstView(std::span<const std::int64_t>(header))); }));
  if (comm_.rank() == source)
    sent.push_back(posted(
        [&] { return ctx.send(joiner, kJoinState, core::ConstView(state.data(), state.size(), core::DType::u8)); }));
  // The joiner lost without a word counts in: its loss is then seen by the next collective.
  const std::optional<std::int64_t> word = word_of(ctx, joiner, sequence, since);
  for (core::Work& w : sent) (void)settled(ctx, w, joiner, since, "the join's header or state");
  if (word == kAbort) {
    core::log(core::LogLevel::info, "elastic: worker {} called its admission off (a member was lost)", joiner);
    return std::nullopt;
  }
  comm_.regroup(members, sequence, since);  // a member lost during the admission stays lost
  strategy_->regrouped(state_);
  return Regrouping{.members = members, .source = source, .steps = steps_, .rounds = membership_rounds_};
}

Regrouping Worker::join_group() {
  FAST_ENFORCE_AS(core::InvalidUsage, comm_.elastic() && comm_.joining() && !finished_,
                  "Worker::join_group: needs an elastic communicator in joining mode, before finish()");
  runtime::Context& ctx = comm_.own_context();
  std::int64_t taken = -1;           // the sequence of the last header taken: older ones are left over
  std::optional<LaterHeader> later;  // a later admission's header, met while waiting for others
  for (;;) {
    core::Buffer first;
    int from = -1;
    if (later) {
      first = std::move(later->header);
      from = later->from;
      later.reset();
    } else {
      await_header(ctx, ctx.recv_any(kJoinHeader, first, from));
    }
    const JoinHeader h = parse_header(first, from, comm_.rank(), comm_.size());
    if (static_cast<std::int64_t>(h.sequence) <= taken) continue;  // another member's of an admission taken
    taken = h.sequence;
    // Losses seen from here on count: a rank lost earlier and admitted again meanwhile is a member.
    const double since = ctx.now();
    std::vector<int> others = h.members;
    std::erase(others, comm_.rank());
    std::optional<core::Buffer> state;
    if (headers_of(ctx, h, from, others, since, later)) state = state_of(ctx, h.source, others, h.sequence, since);
    // The state is taken before the word: a state that does not fit ends this process (IoError),
    // whose loss the members then see like any other.
    if (state) {
      const std::string from_text = fmt::format("the state of worker {}", h.source);
      const std::span<const std::uint8_t> raw = state->as<std::uint8_t>().subspan(sizeof(std::int64_t));
      restore(decode_checkpoint(std::span<const std::byte>(reinterpret_cast<const std::byte*>(raw.data()), raw.size()),
                                from_text),
              from_text);
    }
    const std::array<std::int64_t, 2> word{h.sequence, state ? kReady : kAbort};
    std::vector<std::pair<int, core::Work>> told;
    for (int m : others)
      told.emplace_back(
          m, posted([&] { return ctx.send(m, kJoinWord, core::ConstView(std::span<const std::int64_t>(word))); }));
    for (auto& [m, w] : told) (void)settled(ctx, w, m, since, "the word to a member");
    if (!state) {
      const int lost = first_lost(ctx, others, since);
      if (lost >= 0 || !later)
        core::log(core::LogLevel::warn,
                  "elastic: worker {} lost before worker {} had the state of worker {}; it waits for the next "
                  "admission",
                  lost >= 0 ? fmt::format("{}", lost) : std::string("of the group"), comm_.rank(), h.source);
      else
        core::log(core::LogLevel::warn,
                  "elastic: the members began admission {} before worker {} had every header of admission {}; it "
                  "takes the later one",
                  later->sequence, comm_.rank(), h.sequence);
      continue;
    }
    membership_rounds_ = h.rounds;
    comm_.end_join();
    comm_.regroup(h.members, h.sequence, since);  // a member lost meanwhile stays lost
    strategy_->forget_own_state(state_);          // the state restored is the first member's
    strategy_->regrouped(state_);
    return {.members = comm_.members(), .source = h.source, .steps = steps_, .rounds = membership_rounds_};
  }
}

}  // namespace fast::strategy
