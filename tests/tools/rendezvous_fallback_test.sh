#!/usr/bin/env bash
# The rendezvous moves to another host (docs/launch.md, "The rendezvous on another host"): two
# network namespaces joined by a veth pair that this test creates, an asynchronous (adpsgd) zmq run
# of 3 processes of one worker, process 0 on host a and processes 1 and 2 on host b, each host with
# its own CURVE key, meeting at `--rendezvous A:29500,B:29500`.
#  1. The test SIGKILLs process 0 (host a: the rendezvous and the batch budget) at 10% of the run.
#     Process 1, the lowest live process of host b, must serve the second address; process 0
#     started again on host a (FAST_RESTARTED=1) must find it there and take rank 0 back. Without
#     the second address nobody would answer it.
#  2. The test SIGKILLs process 2. The rendezvous's server (process 1) lives, so the new process 0,
#     now the lowest live process of host a, must not serve the first address beside it; process 2
#     started again must take its rank back through process 1.
# The run must end with exit 0 everywhere and 3 live workers.
# Exit 77 (skipped) when namespaces cannot be created (not root, no CAP_NET_ADMIN).
# Usage: rendezvous_fallback_test.sh BIN_DIR
set -u
bin="$1/fast"
. "$(dirname "$0")/netns_pair.sh"
netns_pair r 10.197.0
netns_keys   # a.key, b.key, allow.txt (netns_pair.sh)
common=(train --runtime zmq --rendezvous "$addr_a:29500,$addr_b:29500" --world-size 3
        --model mlp --strategy adpsgd --epochs 2 --batch 64 --slowdown 12,12,12 --seed 3 --eval-every 0
        --progress auto --allow "$work/allow.txt" --peer-timeout 2 --rendezvous-timeout 60)
# start RANK LOG [ENV...]: process RANK (0 on host a, 1 and 2 on host b) in the background ($!)
start() {
  local rank="$1" log="$2" ns="$ns_b" key="$work/b.key" host="$addr_b"
  shift 2
  [ "$rank" = 0 ] && { ns="$ns_a" key="$work/a.key" host="$addr_a"; }
  ip netns exec "$ns" env "$@" timeout 300 "$bin" "${common[@]}" --process-rank "$rank" --key "$key" \
    --host "$host" --summary "$work/s$rank.json" > "$log" 2>&1 &
}
fail() {
  echo "FAIL: $1"
  for f in p0.log p1.log p2.log q0.log q2.log; do [ -f "$work/$f" ] && { echo "--- $f"; cat "$work/$f"; }; done
  exit 1
}
for r in 0 1 2; do
  start "$r" "$work/p$r.log"
  pids+=($!)
  launched[$r]=$!
done
wait_for "$work/p0.log" "epoch 1 | step" 120 || fail "training did not start within 120 s"
# Killed at 10% of the run, by its progress (not by the clock: a loaded machine trains slower).
percent() { sed -n 's/.*| step [0-9]*\/[0-9]* (\([0-9]*\)%).*/\1/p' "$work/p0.log" | tail -1; }
end=$((SECONDS + 120))
until [ "$(percent)" -ge 10 ] 2>/dev/null; do
  [ "$SECONDS" -ge "$end" ] && fail "process 0 did not reach 10% of the run within 120 s"
  sleep 0.1
done
victim=$(trainer "$work/p0.log")
[ -n "$victim" ] || fail "no pid in process 0's log"
pids+=("$victim")
kill -9 "$victim"
wait_for "$work/p1.log" "process 1 serves the rendezvous now, at tcp://$addr_b:29500" 60 ||
  fail "process 1 did not take the second rendezvous address over within 60 s"
start 0 "$work/q0.log" FAST_RESTARTED=1
pids+=($!)
launched[3]=$!
wait_for "$work/q0.log" "worker 0 rejoined the run at step" 90 || fail "the new process 0 did not rejoin within 90 s"
grep -qF "rendezvous: tcp://$addr_b:29500 serves the run now" "$work/q0.log" ||
  fail "the new process 0 did not find the rendezvous at the second address"
victim=$(trainer "$work/p2.log")
[ -n "$victim" ] || fail "no pid in process 2's log"
pids+=("$victim")
kill -9 "$victim"
start 2 "$work/q2.log" FAST_RESTARTED=1
pids+=($!)
launched[4]=$!
codes=""
for i in 1 3 4; do
  wait "${launched[$i]}"
  codes="$codes $?"
done
pids=()
[ "$codes" = " 0 0 0" ] || fail "exit codes of process 1, the new process 0 and the new process 2:$codes"
grep -qF "serves the rendezvous now" "$work/q0.log" &&
  fail "the new process 0 served the first address while process 1 served the second"
grep -qF "rendezvous: tcp://$addr_b:29500 serves the run now" "$work/q2.log" ||
  fail "the new process 2 did not take its rank back through the second address"
read_summary='import json,sys; s=json.load(open(sys.argv[1])); print(s["live_workers"], s["rejoined_workers"])'
summary="$work/s0.json"   # written by the process of worker 0 (the group's first member at the end)
[ -f "$summary" ] || summary="$work/s1.json"
seen=$(python3 -c "$read_summary" "$summary") || fail "no summary"
[ "$seen" = "3 [0, 2]" ] || fail "expected 3 live workers and rejoined workers [0, 2], got: $seen"
echo "rendezvous fallback: host a lost, process 1 served $addr_b:29500, ranks 0 and 2 came back through it" \
  "and it stayed the only server; 3 live workers at the end"
echo "1 passed, 0 failed"
