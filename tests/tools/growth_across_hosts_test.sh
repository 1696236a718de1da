#!/usr/bin/env bash
# An elastic run grows by a process on another host (docs/faults.md, "Growing a run"): two network
# namespaces joined by a veth pair that this test creates, each host with its own CURVE key. Host a
# runs processes 0 and 1 of an elastic allreduce run with `--max-workers 3` (rank 2 vacant); a
# process started on host b with FAST_RESTARTED=1, `--rendezvous A:29500` and no rank of its own
# must take rank 2 through process 0's rendezvous and join at a step boundary, over the veth pair.
# Then SIGTERM to processes 0 and 1: the three agree on a last step, each exits 143, and the summary
# shows 3 live workers whose parameters are equal bit for bit, rank 2 rejoined, none vacant or lost.
# Exit 77 (skipped) when namespaces cannot be created (not root, no CAP_NET_ADMIN).
# Usage: growth_across_hosts_test.sh BIN_DIR
set -u
bin="$1/fast"
. "$(dirname "$0")/netns_pair.sh"
netns_pair g 10.196.0
netns_keys   # a.key, b.key, allow.txt (netns_pair.sh)
common=(train --runtime zmq --rendezvous "$addr_a:29500" --world-size 2 --elastic --max-workers 3
        --model mlp --strategy allreduce --epochs 20 --batch 32 --slowdown 6,6,6 --seed 3 --eval-every 0
        --progress never --allow "$work/allow.txt" --peer-timeout 10 --rendezvous-timeout 60)
fail() {
  echo "FAIL: $1"
  for f in a0.log a1.log b.log; do [ -f "$work/$f" ] && { echo "--- $f"; cat "$work/$f"; }; done
  exit 1
}
for r in 0 1; do
  ip netns exec "$ns_a" timeout 300 "$bin" "${common[@]}" --process-rank "$r" --key "$work/a.key" \
    --host "$addr_a" --summary "$work/s.json" > "$work/a$r.log" 2>&1 &
  pids+=($!)
done
wait_for "$work/a0.log" "elastic: the run starts with 2 of 3 workers" 120 || fail "the run did not start within 120 s"
ip netns exec "$ns_b" env FAST_RESTARTED=1 timeout 300 "$bin" "${common[@]}" --key "$work/b.key" \
  --host "$addr_b" --summary "$work/s.json" > "$work/b.log" 2>&1 &
pids+=($!)
wait_for "$work/a0.log" "elastic: worker 2 joined at step" 120 ||
  fail "the process on host b did not join within 120 s"
for r in 0 1; do
  victim=$(trainer "$work/a$r.log")
  [ -n "$victim" ] || fail "no pid in process $r's log"
  kill -TERM "$victim"
done
codes=""
for p in "${pids[@]}"; do
  wait "$p"
  codes="$codes $?"
done
pids=()
# Interrupted by SIGTERM: the three agree on a last step and end with 128 + 15, the newcomer too.
[ "$codes" = " 143 143 143" ] || fail "exit codes of processes 0 and 1 and of the newcomer:$codes"
grep -qF "elastic: worker 2 joined the run at step" "$work/b.log" || fail "the newcomer did not say it joined as worker 2"
read_summary='import json,sys
s = json.load(open(sys.argv[1]))
h = s["param_hash_per_worker"]
print(s["live_workers"], s["rejoined_workers"], s.get("vacant_workers", []), s.get("lost_workers", []),
      len(set(h)) == 1 and h[0] is not None)'
seen=$(python3 -c "$read_summary" "$work/s.json") || fail "no summary"
[ "$seen" = "3 [2] [] [] True" ] ||
  fail "expected 3 live workers, rank 2 rejoined, none vacant or lost, equal hashes; got: $seen"
echo "growth across hosts: a process on host b took rank 2 through host a's rendezvous and joined;" \
  "3 live workers with equal parameters at the end"
echo "1 passed, 0 failed"
