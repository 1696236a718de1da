#!/usr/bin/env bash
# A message that takes longer than the peer timeout to cross a slow link must not make a live
# process look lost. Two network namespaces joined by a veth pair that this test creates (its own
# addresses, inside those namespaces only), the link shaped to 4 Mbit/s with tbf; 2 processes of
# one worker each train mlp with allreduce for 4 steps with --peer-timeout 1. Each step moves
# about 0.47 MB each way (half of mlp's 0.94 MB of parameters), about 0.9 s at 4 Mbit/s, so the
# data alone leaves a 1 s silence on the link; the heartbeats travel on their own connections
# (docs/launch.md, "Failure") and keep both processes alive. Both must exit 0, no process may be
# counted lost, and the final parameters (param_hash) equal those of the same run as 2 threads.
# Exit 77 (skipped) when namespaces cannot be created (not root, no CAP_NET_ADMIN).
# Usage: slow_link_test.sh BIN_DIR
set -u
bin="$1/fast"
. "$(dirname "$0")/netns_pair.sh"
netns_pair s 10.197.0
netns_shape tbf rate 4mbit burst 32kb latency 400ms || { echo "FAIL: cannot shape the link with tbf"; exit 1; }
common=(train --runtime zmq --rendezvous $addr_a:29500 --world-size 2 --insecure
        --model mlp --strategy allreduce --steps 4 --batch 32 --seed 5 --eval-every 0 --progress never
        --peer-timeout 1 --rendezvous-timeout 60)
ip netns exec "$ns_a" timeout 240 "$bin" "${common[@]}" --process-rank 0 --host "$addr_a" \
  --summary "$work/a.json" > "$work/a.log" 2>&1 &
pids+=($!)
ip netns exec "$ns_b" timeout 240 "$bin" "${common[@]}" --process-rank 1 --host "$addr_b" \
  --summary "$work/b.json" > "$work/b.log" 2>&1 &
pids+=($!)
wait "${pids[0]}"; ra=$?
wait "${pids[1]}"; rb=$?
pids=()
show() { echo "--- process 0"; cat "$work/a.log"; echo "--- process 1"; cat "$work/b.log"; }
if [ "$ra" != 0 ] || [ "$rb" != 0 ]; then
  echo "FAIL: exit codes $ra and $rb"; show; exit 1
fi
if grep -q " lost" "$work/a.log" "$work/b.log"; then
  echo "FAIL: a live process was counted lost"; show; exit 1
fi
same_hash_as_threads "$work/a.json" 2 --model mlp --strategy allreduce --steps 4 --batch 32 --seed 5 --eval-every 0
echo "slow link: 4 steps of 0.47 MB messages at 4 Mbit/s with a 1 s peer timeout completed; param_hash $hash_seen, as under threads"
echo "1 passed, 0 failed"
