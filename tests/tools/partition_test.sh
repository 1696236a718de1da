#!/usr/bin/env bash
# A network partition in an elastic run whose `--min-workers` is a majority (docs/faults.md, "A
# network partition"): two network namespaces joined by a veth pair that this test creates, each host
# with its own CURVE key; processes 0 and 1 on host a, process 2 on host b, an elastic allreduce run
# of 3 workers with `--min-workers 2`. Once training runs, the test takes the link down (both ends):
# each side counts the other lost after the peer timeout. Host b's side, 1 worker, is below 2: it must
# end with exit code 6 (below_min_workers) and a summary saying so. Host a's side, 2 workers, must
# train on to the run's last step (the link is brought back up meanwhile: its return, with process
# 2 gone, must not disturb it), and end with exit code 0, 2 live workers of equal parameters and
# worker 2 lost. Only one side trains on as the run.
# Exit 77 (skipped) when namespaces cannot be created (not root, no CAP_NET_ADMIN).
# Usage: partition_test.sh BIN_DIR
set -u
bin="$1/fast"
. "$(dirname "$0")/netns_pair.sh"
netns_pair p 10.195.0
netns_keys   # a.key, b.key, allow.txt (netns_pair.sh)
common=(train --runtime zmq --rendezvous "$addr_a:29500" --world-size 3 --elastic --min-workers 2
        --model mlp --strategy allreduce --steps 600 --batch 32 --slowdown 6,6,6 --seed 3 --eval-every 0
        --progress auto --allow "$work/allow.txt" --peer-timeout 3 --rendezvous-timeout 60)
fail() {
  echo "FAIL: $1"
  for f in a0.log a1.log b2.log; do [ -f "$work/$f" ] && { echo "--- $f"; tail -40 "$work/$f"; }; done
  exit 1
}
for r in 0 1 2; do
  ns="$ns_a" key="$work/a.key" host="$addr_a" log="$work/a$r.log"
  [ "$r" = 2 ] && { ns="$ns_b" key="$work/b.key" host="$addr_b" log="$work/b2.log"; }
  ip netns exec "$ns" timeout 300 "$bin" "${common[@]}" --process-rank "$r" --key "$key" --host "$host" \
    --summary "$work/s$r.json" > "$log" 2>&1 &
  pids+=($!)
  launched[$r]=$!
done
wait_for "$work/a0.log" "epoch 1 | step" 120 || fail "training did not start within 120 s"
ip -n "$ns_a" link set "$if_a" down && ip -n "$ns_b" link set "$if_b" down || fail "could not take the link down"
# Host b's side ends by itself, below --min-workers.
wait "${launched[2]}"
code_b=$?
[ "$code_b" = 6 ] || fail "process 2, cut off alone, exited with $code_b, expected 6 (below --min-workers)"
grep -qF "below --min-workers 2" "$work/b2.log" || fail "process 2 did not say it ended below --min-workers"
wait_for "$work/a0.log" "elastic: worker(s) 2 lost" 60 || fail "host a's side did not count worker 2 lost"
ip -n "$ns_a" link set "$if_a" up && ip -n "$ns_b" link set "$if_b" up || fail "could not bring the link up"
# Host a's side trains on to the run's end, the link back up.
codes=""
for r in 0 1; do
  wait "${launched[$r]}"
  codes="$codes $?"
done
pids=()
[ "$codes" = " 0 0" ] || fail "exit codes of processes 0 and 1:$codes"
read_summary='import json,sys
s = json.load(open(sys.argv[1]))
h = s["param_hash_per_worker"]
print(s["live_workers"], s.get("lost_workers"), s.get("below_min_workers", False), s["steps_per_worker"][:2],
      h[0] == h[1] and h[0] is not None)'
seen=$(python3 -c "$read_summary" "$work/s0.json") || fail "no summary of host a's side"
[ "$seen" = "2 [2] False [600, 600] True" ] ||
  fail "host a's side: expected 2 live workers, worker 2 lost, not below min_workers, 600 steps, equal hashes; got: $seen"
read_cut='import json,sys; s = json.load(open(sys.argv[1])); print(s["live_workers"], s["below_min_workers"])'
seen=$(python3 -c "$read_cut" "$work/s2.json") || fail "no summary of host b's side"
[ "$seen" = "1 True" ] || fail "host b's side: expected 1 live worker, below_min_workers; got: $seen"
echo "partition: host b's side (1 worker) ended below --min-workers 2 with exit 6; host a's side" \
  "(2 workers) trained on to its last step and ended with equal parameters"
echo "1 passed, 0 failed"
