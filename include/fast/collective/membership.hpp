#pragma once
// The survivors' agreement of an elastic group (CommunicatorOptions::elastic; docs/faults.md,
// "Elastic synchronous training"). After a collective failed with PeerLost, every survivor calls
// agree_on_survivors(); it returns, on every one of them, the same new group, each member's
// progress and the sequence number the collectives go on from. The caller then regroups the
// Communicator (Communicator::regroup) and brings every member to one state.
//
// Protocol. Rounds of an all-to-all among the survivors, on the worker's own Context (not the
// watched one) under tags make_tag(TagKind::membership, round, 0): each survivor settles its view
// of the lost workers (Context::settle_lost_peers), sends its proposal — the members it believes
// alive, its progress and its next collective sequence number — to every member of that set, and
// receives theirs. If every proposal names the same set, that set is the group. Otherwise (a loss
// seen by some survivors and not yet by others) each survivor proposes the intersection of the
// sets it received in the next round; a receive that fails because its sender was lost (a second
// loss during the agreement) starts the next round too. Lost workers stay lost, so the sets only
// shrink and the rounds end. A survivor that agreed while another saw a loss during that round
// finds it in its next collective, whose waits are watched, and joins the other in the next round:
// `round` counts the rounds of every agreement of the run, the same on every survivor.
//
// Limits: a worker that the others declared lost while it still runs (frozen past the peer
// timeout) is not taken back: it is not in their sets, and its waits for them end with the
// operation time limit. Thread-safety: the worker's main activity only.

#include <cstdint>
#include <vector>

#include "fast/collective/communicator.hpp"

namespace fast::collective {

struct SurvivorAgreement {
  std::vector<int> members;            // the new group, in rank order (this worker among them)
  std::vector<std::int64_t> progress;  // each member's progress as it proposed it (members' order)
  std::uint32_t next_sequence = 0;     // the largest next collective sequence number proposed
  std::uint32_t round = 0;             // the round that agreed
  std::vector<int> lost;               // the members of the old group that are not in the new one
};

// Collective among the survivors of comm's group (see above). `progress`: what the caller needs
// to compare across members (fast train: the steps taken); `round`: the caller's count of rounds,
// in and out (start at 0, keep it across agreements). Errors: PeerLost when this worker itself is
// lost; TimeoutError when a survivor does not answer within the operation time limit.
SurvivorAgreement agree_on_survivors(Communicator& comm, std::int64_t progress, std::uint32_t& round);

}  // namespace fast::collective
