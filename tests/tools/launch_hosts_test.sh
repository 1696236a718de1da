#!/usr/bin/env bash
# fast launch across hosts, emulated: two network namespaces joined by a veth pair that this test
# creates, named in a host file, each process started through the launcher template
# "ip netns exec {host} env FAST_HOST=0.0.0.0" (as `ssh {host}` would start it on a real host). The
# processes bind every address (FAST_HOST=0.0.0.0) and are reached at the address the host file
# advertises (advertise=ADDR): without it peers would be given 0.0.0.0 and could not meet. The key
# pair travels on the processes' standard input, never on a command line. A 4-process run, 2 per
# namespace, with --ports: it must end with the param_hash of 4 threads, and every socket listening
# in either namespace while it runs must lie in the range (ss). Each process sizes libtorch's threads
# for its host's 2 processes, then for the machine's 4 that it finds at the rendezvous.
# Exit 77 (skipped) when namespaces cannot be created (not root, no CAP_NET_ADMIN).
# Usage: launch_hosts_test.sh BIN_DIR
set -u
bin="$1/fast"
. "$(dirname "$0")/netns_pair.sh"
netns_pair l 10.198.0
lo=29610 hi=29640
cat > "$work/hosts" <<HOSTS
# host        processes  where the others reach it
$ns_a slots=2 address=$addr_a advertise=$addr_a
$ns_b slots=2 address=$addr_b advertise=$addr_b
HOSTS
"$bin" keygen --out "$work/run.key" > /dev/null || exit 1
secret=$(sed -n 's/^secret = "\(.*\)"$/\1/p' "$work/run.key")
[ ${#secret} = 40 ] || { echo "FAIL: no secret key in the key file"; exit 1; }
printf '%s\n' "$secret" > "$work/secret.pattern"   # grep -f: the secret on no command line of ours either
run=(--model mlp --strategy allreduce --steps 150 --batch 32 --seed 5 --eval-every 0)
timeout 300 "$bin" launch --hostfile "$work/hosts" --launcher "ip netns exec {host} env FAST_HOST=0.0.0.0" \
  --ports "$lo-$hi" --key "$work/run.key" --timeout 240 -- fast train --runtime zmq "${run[@]}" --summary "$work/s.json" \
  --progress never > "$work/launch.log" 2>&1 &
launch=$!
pids+=($launch)
# While the run lasts: every listening TCP port in each namespace, and how many at most.
seen_a=0 seen_b=0 outside="" exposed=0
while kill -0 "$launch" 2>/dev/null; do
  if grep -qsaF -f "$work/secret.pattern" /proc/[0-9]*/cmdline; then exposed=1; fi
  for ns in "$ns_a" "$ns_b"; do
    ports=$(ip netns exec "$ns" ss -ltnH 2>/dev/null | awk '{n = split($4, a, ":"); print a[n]}')
    count=0
    for p in $ports; do
      count=$((count + 1))
      if [ "$p" -lt "$lo" ] || [ "$p" -gt "$hi" ]; then outside="$outside $ns:$p"; fi
    done
    if [ "$ns" = "$ns_a" ] && [ "$count" -gt "$seen_a" ]; then seen_a=$count; fi
    if [ "$ns" = "$ns_b" ] && [ "$count" -gt "$seen_b" ]; then seen_b=$count; fi
  done
  sleep 0.1
done
wait "$launch"; rc=$?
pids=()
if [ "$rc" != 0 ]; then echo "FAIL: fast launch exited $rc"; cat "$work/launch.log"; exit 1; fi
if [ -n "$outside" ]; then echo "FAIL: ports listening outside $lo-$hi:$outside"; cat "$work/launch.log"; exit 1; fi
# Each process listens for data, heartbeats and streams (3 ports): at least 6 per namespace seen.
if [ "$seen_a" -lt 6 ] || [ "$seen_b" -lt 6 ]; then
  echo "FAIL: expected >= 6 listening ports per namespace during the run, saw $seen_a and $seen_b"
  cat "$work/launch.log"; exit 1
fi
# The output is prefixed with host and rank; the secret key was on no command line (/proc/PID/cmdline).
grep -q "^\[$ns_b:3\] " "$work/launch.log" || { echo "FAIL: no line prefixed [$ns_b:3]"; cat "$work/launch.log"; exit 1; }
[ "$exposed" = 0 ] || { echo "FAIL: the secret key was on a command line"; exit 1; }
# Threads: launch tells each process the 2 of its "host" (FAST_LOCAL_WORLD_SIZE); at the rendezvous
# the 4 find that they share one machine (one kernel: one boot id), and the larger count wins.
told=$(grep -c "libtorch intra-op threads: .* 2 workers on this host)" "$work/launch.log")
found=$(grep -c "libtorch intra-op threads: .* 4 workers on this host)" "$work/launch.log")
if [ "$told" != 4 ] || [ "$found" != 4 ]; then
  echo "FAIL: expected each of the 4 processes to size its threads for 2 workers, then for 4; saw $told and $found"
  cat "$work/launch.log"; exit 1
fi
same_hash_as_threads "$work/s.json" 4 "${run[@]}"
echo "launch --hostfile: 4 processes over two namespaces; ports in $lo-$hi (at most $seen_a and $seen_b listening);" \
  "param_hash $hash_seen, as under threads"
