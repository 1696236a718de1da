#include "fast/collective/membership.hpp"

#include <algorithm>
#include <iterator>
#include <span>

#include "fast/core/error.hpp"

namespace fast::collective {

namespace {

// A proposal on the wire: [progress, next sequence, one bit per rank of the world in 64-bit words].
constexpr std::size_t kHeader = 2;

std::size_t proposal_length(int world) { return kHeader + (static_cast<std::size_t>(world) + 63) / 64; }

std::vector<std::int64_t> encode(std::int64_t progress, std::uint32_t sequence, const std::vector<int>& set,
                                 int world) {
  std::vector<std::int64_t> out(proposal_length(world), 0);
  out[0] = progress;
  out[1] = sequence;
  for (int r : set) out[kHeader + static_cast<std::size_t>(r) / 64] |= std::int64_t{1} << (r % 64);
  return out;
}

std::vector<int> set_of(const std::vector<std::int64_t>& proposal, int world) {
  std::vector<int> set;
  for (int r = 0; r < world; ++r)
    if ((proposal[kHeader + static_cast<std::size_t>(r) / 64] >> (r % 64)) & 1) set.push_back(r);
  return set;
}

std::vector<int> intersection(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// One round: sends `mine` to every other member of `set` and receives theirs (same order as
// `set`, this worker's slot holding `mine`). False when a member was lost meanwhile.
bool exchange(runtime::Context& ctx, const std::vector<int>& set, std::uint32_t round,
              const std::vector<std::int64_t>& mine, std::vector<std::vector<std::int64_t>>& theirs) {
  const runtime::Tag tag = runtime::make_tag(runtime::TagKind::membership, round, 0);
  theirs.assign(set.size(), std::vector<std::int64_t>(mine.size()));
  std::vector<core::Work> recvs, sends;
  for (std::size_t i = 0; i < set.size(); ++i) {
    if (set[i] == ctx.rank()) {
      theirs[i] = mine;
      continue;
    }
    // A peer already known lost makes the call itself throw: the same as a failed Work.
    try {
      recvs.push_back(ctx.recv(set[i], tag, core::MutableView(std::span<std::int64_t>(theirs[i]))));
      sends.push_back(ctx.send(set[i], tag, core::ConstView(std::span<const std::int64_t>(mine))));
    } catch (const core::PeerLost&) {
      sends.push_back(core::Work::failed(std::current_exception()));
    }
  }
  bool complete = true;
  for (std::vector<core::Work>* works : {&recvs, &sends})
    for (const core::Work& w : *works) {
      try {
        w.wait();
      } catch (const core::PeerLost&) {
        complete = false;  // its sender or receiver was lost: the next round goes on without it
      }
    }
  return complete;
}

}  // namespace

SurvivorAgreement agree_on_survivors(Communicator& comm, std::int64_t progress, std::uint32_t& round) {
  runtime::Context& ctx = comm.own_context();
  const int world = ctx.size();
  ctx.ensure_alive(ctx.rank());
  std::vector<int> set = comm.members();
  std::vector<std::vector<std::int64_t>> theirs;
  for (;;) {
    ctx.ensure_alive(ctx.rank());  // this worker lost during the agreement: it ends here
    ctx.settle_lost_peers();       // every loss before this point is seen
    const std::size_t before = set.size();
    std::erase_if(set, [&](int r) { return r != ctx.rank() && !ctx.alive(r); });
    ++round;
    const std::vector<std::int64_t> mine = encode(progress, comm.next_sequence_number(), set, world);
    if (!exchange(ctx, set, round, mine, theirs)) {
      // A failed round always names a lost member, so the next one is smaller; should the runtime
      // report the loss later than the failure, wait a little rather than spin.
      std::erase_if(set, [&](int r) { return r != ctx.rank() && !ctx.alive(r); });
      if (set.size() == before) ctx.sleep(0.01);
      continue;
    }
    bool same = true;
    std::vector<int> next = set;
    for (const std::vector<std::int64_t>& p : theirs) {
      const std::vector<int> proposed = set_of(p, world);
      same = same && proposed == set;
      next = intersection(next, proposed);
    }
    if (!same) {
      set = std::move(next);
      FAST_ENFORCE_AS(core::PeerLost, std::binary_search(set.begin(), set.end(), ctx.rank()),
                      "elastic group: the other survivors count worker {} as lost", ctx.rank());
      continue;
    }
    SurvivorAgreement a{.members = set, .round = round};
    for (const std::vector<std::int64_t>& p : theirs) {
      a.progress.push_back(p[0]);
      a.next_sequence = std::max(a.next_sequence, static_cast<std::uint32_t>(p[1]));
    }
    for (int r : comm.members())
      if (!std::binary_search(set.begin(), set.end(), r)) a.lost.push_back(r);
    return a;
  }
}

}  // namespace fast::collective
