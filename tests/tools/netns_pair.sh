# Two emulated hosts for the multi-host tests (sourced, not run): two network namespaces joined by a
# veth pair that the test creates, with addresses of its own subnet inside those namespaces only,
# removed again with everything the test started when the test's shell exits.
#
#   netns_pair TAG SUBNET   creates namespaces "fast${TAG}a$$" and "fast${TAG}b$$" ($ns_a, $ns_b),
#                           the veth ends $if_a and $if_b, addresses SUBNET.1 ($addr_a) and SUBNET.2
#                           ($addr_b) on a /24; exits 77 (skipped) when namespaces cannot be created
#                           (not root, no CAP_NET_ADMIN)
#   netns_shape QDISC...    puts the root qdisc QDISC... (tc syntax) on both ends; fails when the
#                           kernel lacks it
#   pids+=(PID)             processes the exit kills (kill -9), by pid
#   work                    a temporary folder, removed at exit
#   netns_keys              a key pair per host, $work/a.key and $work/b.key (`$bin keygen`), and
#                           $work/allow.txt: a's public key first (the rendezvous host's), then b's
#   wait_for FILE TEXT S    until FILE contains TEXT (0), or S seconds passed (1)
#   trainer LOG             the pid of the training process itself (under ip netns exec and
#                           timeout), from its log's "zmq runtime: pid N listens on" line
pids=()
work=$(mktemp -d)
ns_a="" ns_b=""
netns_cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -n "$ns_a" ] && ip netns del "$ns_a" 2>/dev/null
  [ -n "$ns_b" ] && ip netns del "$ns_b" 2>/dev/null
  rm -rf "$work"
}
trap netns_cleanup EXIT

netns_pair() {
  local tag="$1" subnet="$2"
  if ! ip netns add "fast${tag}a$$" 2>/dev/null; then
    echo "SKIP: cannot create network namespaces here (needs root / CAP_NET_ADMIN)"
    exit 77
  fi
  ns_a="fast${tag}a$$"
  ip netns add "fast${tag}b$$" || exit 77
  ns_b="fast${tag}b$$"
  if_a="v${tag}a$$" if_b="v${tag}b$$"
  addr_a="$subnet.1" addr_b="$subnet.2"
  ip link add "$if_a" type veth peer name "$if_b" &&
    ip link set "$if_a" netns "$ns_a" &&
    ip link set "$if_b" netns "$ns_b" &&
    ip -n "$ns_a" addr add "$addr_a/24" dev "$if_a" &&
    ip -n "$ns_b" addr add "$addr_b/24" dev "$if_b" &&
    ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up &&
    ip -n "$ns_a" link set "$if_a" up && ip -n "$ns_b" link set "$if_b" up || exit 1
}

netns_shape() {
  ip netns exec "$ns_a" tc qdisc add dev "$if_a" root "$@" 2>/dev/null &&
    ip netns exec "$ns_b" tc qdisc replace dev "$if_b" root "$@" 2>/dev/null
}

# same_hash_as_threads SUMMARY WORKERS TRAIN_ARGS...: runs `$bin train --runtime threads --workers
# WORKERS TRAIN_ARGS...` and checks that it ends with the param_hash of SUMMARY (a run across the
# namespaces); sets $hash_seen, or prints both and exits 1.
same_hash_as_threads() {
  local summary="$1" workers="$2"
  shift 2
  "$bin" train --runtime threads --workers "$workers" "$@" --progress never --summary "$work/t.json" \
    > "$work/t.log" 2>&1 || { cat "$work/t.log"; exit 1; }
  local read_hash='import json,sys; print(json.load(open(sys.argv[1]))["param_hash"])'
  hash_seen=$(python3 -c "$read_hash" "$summary")
  local threads_hash
  threads_hash=$(python3 -c "$read_hash" "$work/t.json")
  if [ "$hash_seen" != "$threads_hash" ]; then
    echo "FAIL: param_hash $hash_seen across the namespaces, $threads_hash under threads"; exit 1
  fi
}

netns_keys() {
  "$bin" keygen --out "$work/a.key" > /dev/null || exit 1
  "$bin" keygen --out "$work/b.key" > /dev/null || exit 1
  cut -d' ' -f1 "$work/a.key.pub" > "$work/allow.txt"
  cut -d' ' -f1 "$work/b.key.pub" >> "$work/allow.txt"
}

wait_for() {
  local end=$((SECONDS + $3))
  until grep -qF -- "$2" "$1" 2>/dev/null; do
    [ "$SECONDS" -ge "$end" ] && return 1
    sleep 0.1
  done
}

trainer() { sed -n 's/.*zmq runtime: pid \([0-9]*\) listens on.*/\1/p' "$1" | head -1; }
