#!/usr/bin/env bash
# Two hosts, emulated: two network namespaces joined by a veth pair that this test creates (its own
# addresses, inside those namespaces only), the link shaped to 100 Mbit/s with 5 ms delay (tc netem;
# where the kernel has no netem, tbf shapes the rate and the delay is left out, said on stderr). A
# 4-worker zmq run, 2 workers per namespace, meets by rendezvous with CURVE keys of each host and
# completes; both processes must exit 0, and the final parameters (param_hash) equal those of the
# same run as 4 threads of one process.
# Exit 77 (skipped) when namespaces cannot be created (not root, no CAP_NET_ADMIN).
# Usage: two_hosts_test.sh BIN_DIR
set -u
bin="$1/fast"
. "$(dirname "$0")/netns_pair.sh"
netns_pair h 10.199.0
if ! netns_shape netem delay 5ms rate 100mbit; then
  echo "note: this kernel has no netem qdisc; shaping the link to 100 Mbit/s with tbf, without the 5 ms delay" >&2
  netns_shape tbf rate 100mbit burst 64kb latency 100ms || exit 1
fi
netns_keys   # a.key, b.key, allow.txt (netns_pair.sh)
common=(train --runtime zmq --rendezvous $addr_a:29500 --world-size 2 --workers-per-process 2
        --model mlp --strategy allreduce --steps 30 --batch 32 --seed 3 --eval-every 0 --allow "$work/allow.txt"
        --peer-timeout 10 --rendezvous-timeout 60)
ip netns exec "$ns_a" timeout 300 "$bin" "${common[@]}" --process-rank 0 --key "$work/a.key" --host "$addr_a" \
  --summary "$work/a.json" > "$work/a.log" 2>&1 &
pids+=($!)
ip netns exec "$ns_b" timeout 300 "$bin" "${common[@]}" --process-rank 1 --key "$work/b.key" --host "$addr_b" \
  --summary "$work/b.json" > "$work/b.log" 2>&1 &
pids+=($!)
wait "${pids[0]}"; ra=$?
wait "${pids[1]}"; rb=$?
pids=()
if [ "$ra" != 0 ] || [ "$rb" != 0 ]; then
  echo "FAIL: exit codes $ra and $rb"; echo "--- host a"; cat "$work/a.log"; echo "--- host b"; cat "$work/b.log"
  exit 1
fi
# The same run as 4 threads of one process ends with the same parameters, bit for bit.
same_hash_as_threads "$work/a.json" 4 --model mlp --strategy allreduce --steps 30 --batch 32 --seed 3 --eval-every 0
echo "two hosts: 4 workers over the veth pair completed; param_hash $hash_seen, as under threads"
echo "1 passed, 0 failed"
