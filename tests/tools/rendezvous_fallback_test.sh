#!/usr/bin/env bash
# The rendezvous moves to another host (docs/faults.md, "The rendezvous"): two network namespaces
# joined by a veth pair that this test creates, an asynchronous (adpsgd) 4-worker zmq run of 2
# processes, one per namespace, each with its host's CURVE key, meeting at
# `--rendezvous A:29500,B:29500`. The test SIGKILLs process 0 (host a: the rendezvous and the batch
# budget) once training runs. Process 1, the only live process, on host b, must serve the second
# address; process 0 started again on host a (FAST_RESTARTED=1) must find it there, take rank 0
# back, and the run must end with exit 0 on both and 4 live workers. Without the second address
# nobody would answer the new process 0.
# Exit 77 (skipped) when namespaces cannot be created (not root, no CAP_NET_ADMIN).
# Usage: rendezvous_fallback_test.sh BIN_DIR
set -u
bin="$1/fast"
. "$(dirname "$0")/netns_pair.sh"
netns_pair r 10.197.0
"$bin" keygen --out "$work/a.key" > /dev/null || exit 1
"$bin" keygen --out "$work/b.key" > /dev/null || exit 1
cut -d' ' -f1 "$work/a.key.pub" > "$work/allow.txt"   # the keys of the rendezvous hosts, in --rendezvous order
cut -d' ' -f1 "$work/b.key.pub" >> "$work/allow.txt"
common=(train --runtime zmq --rendezvous "$addr_a:29500,$addr_b:29500" --world-size 2 --workers-per-process 2
        --model mlp --strategy adpsgd --epochs 3 --batch 64 --slowdown 10,10,10,10 --seed 3 --eval-every 0
        --progress auto --allow "$work/allow.txt" --peer-timeout 2 --rendezvous-timeout 60)
start_a() {  # start_a LOG SUMMARY [ENV...]: process 0 on host a, in the background ($!)
  local log="$1" summary="$2"
  shift 2
  ip netns exec "$ns_a" env "$@" timeout 300 "$bin" "${common[@]}" --process-rank 0 --key "$work/a.key" \
    --host "$addr_a" --summary "$summary" > "$log" 2>&1 &
}
# wait_for FILE TEXT SECONDS: until FILE contains TEXT (0), or the time is up (1)
wait_for() {
  local end=$((SECONDS + $3))
  until grep -qF -- "$2" "$1" 2>/dev/null; do
    [ "$SECONDS" -ge "$end" ] && return 1
    sleep 0.1
  done
}
fail() {
  echo "FAIL: $1"
  for f in a.log b.log a2.log; do [ -f "$work/$f" ] && { echo "--- $f"; cat "$work/$f"; }; done
  exit 1
}
start_a "$work/a.log" "$work/a.json"
first=$!
pids+=($first)
ip netns exec "$ns_b" timeout 300 "$bin" "${common[@]}" --process-rank 1 --key "$work/b.key" --host "$addr_b" \
  --summary "$work/b.json" > "$work/b.log" 2>&1 &
b=$!
pids+=($b)
wait_for "$work/a.log" "epoch 1 | step" 120 || fail "training did not start within 120 s"
# The training process itself (under ip netns exec and timeout): its pid from its own log line.
trainer=$(sed -n 's/.*zmq runtime: pid \([0-9]*\) listens on.*/\1/p' "$work/a.log" | head -1)
[ -n "$trainer" ] || fail "no pid in process 0's log"
pids+=("$trainer")
sleep 2
kill -9 "$trainer"
wait "$first" 2>/dev/null
wait_for "$work/b.log" "process 1 serves the rendezvous now, at tcp://$addr_b:29500" 60 ||
  fail "process 1 did not take the second rendezvous address over within 60 s"
start_a "$work/a2.log" "$work/a2.json" FAST_RESTARTED=1
again=$!
pids+=($again)
wait "$b"; rb=$?
wait "$again"; ra=$?
pids=()
[ "$rb" = 0 ] && [ "$ra" = 0 ] || fail "exit codes: process 1 $rb, the new process 0 $ra"
grep -qF "rendezvous: tcp://$addr_b:29500 serves the run now" "$work/a2.log" ||
  fail "the new process 0 did not find the rendezvous at the second address"
read_summary='import json,sys; s=json.load(open(sys.argv[1])); print(s["live_workers"], s["rejoined_workers"])'
summary="$work/a2.json"   # written by the process of worker 0 (the group's first member at the end)
[ -f "$summary" ] || summary="$work/b.json"
seen=$(python3 -c "$read_summary" "$summary") || fail "no summary from either process"
[ "$seen" = "4 [0, 1]" ] || fail "expected 4 live workers and rejoined workers [0, 1], got: $seen"
echo "rendezvous fallback: process 0's host lost, process 1 served $addr_b:29500, rank 0 came back through it;" \
  "4 live workers at the end"
echo "1 passed, 0 failed"
