#!/usr/bin/env bash
# (e) on emulated links: two network namespaces joined by a veth pair that this script creates
# (addresses of 10.197.0.0/24, inside those namespaces only; removed at exit with every process it
# started), the link shaped by tc to each RATE (netem with DELAY where the kernel has netem, else
# tbf without the delay, said in the output). On each link, in the same run: FAST (the default
# between hosts: CURVE, direct streams with AES-256-GCM; one process per namespace, meeting by
# rendezvous) and OpenMPI over tcp (pml ob1, btl tcp; mpirun in one namespace starts the other
# rank through an rsh agent that enters the other namespace; `--mca plm rsh` overrides a container's
# OMPI_MCA_plm=isolated, which would leave the second namespace out). All-reduce of 4, 16 and 64 MiB,
# 2 processes; prints each one's bus bandwidth as a fraction of the link's rate, and FAST / MPI.
# Needs root (CAP_NET_ADMIN); exits 77 where namespaces cannot be created.
# Usage: emulated_link.sh BIN_DIR OUT_DIR [RATE:DELAY ...]   (default: 1gbit:0.2ms 10gbit:0.05ms)
set -u
BIN=$(cd "$1" && pwd)
OUT=$2
shift 2
LINKS=("$@")
if [ ${#LINKS[@]} = 0 ]; then LINKS=(1gbit:0.2ms 10gbit:0.05ms); fi
mkdir -p "$OUT"
. "$(dirname "$0")/../tests/tools/netns_pair.sh"
netns_pair L 10.197.0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ARGS=(--min-bytes 4M --max-bytes 64M --budget-bytes 256M --min-iters 3 --max-iters 20 --warmup 1)

# The rsh agent of mpirun: "agent HOST COMMAND..." runs COMMAND in the namespace holding HOST.
cat > "$work/agent.sh" <<AGENT
#!/bin/sh
host=\$1; shift
case \$host in $addr_a) ns=$ns_a ;; *) ns=$ns_b ;; esac
exec ip netns exec "\$ns" sh -c "\$*"
AGENT
chmod +x "$work/agent.sh"
"$BIN/fast" keygen --out "$work/a.key" > /dev/null && "$BIN/fast" keygen --out "$work/b.key" > /dev/null || exit 1
cut -d' ' -f1 "$work/a.key.pub" > "$work/allow.txt"
cut -d' ' -f1 "$work/b.key.pub" >> "$work/allow.txt"

# fast_rank NS RANK ADDR KEY CSV: one FAST process in namespace NS.
fast_rank() {
  ip netns exec "$1" env FAST_RENDEZVOUS="$addr_a:29517" FAST_WORLD_SIZE=2 FAST_PROCESS_RANK="$2" FAST_HOST="$3" \
    FAST_KEY_FILE="$work/$4" FAST_ALLOW_FILE="$work/allow.txt" timeout 600 \
    "$BIN/bench_allreduce_fast" --runtime zmq "${ARGS[@]}" --label fast --out "$5"
}

# A row per size: RATE,DELAY,SHAPER,IMPL,BYTES,BUSBW_GBPS,FRACTION_OF_LINK
echo "rate,delay,shaper,impl,bytes,busbw_GBps,link_fraction" > "$OUT/link.csv"
for link in "${LINKS[@]}"; do
  rate=${link%%:*} delay=${link#*:}
  ip -n "$ns_a" link set "$if_a" down; ip -n "$ns_a" link set "$if_a" up   # clear counters and queues
  ip netns exec "$ns_a" tc qdisc del dev "$if_a" root 2>/dev/null
  ip netns exec "$ns_b" tc qdisc del dev "$if_b" root 2>/dev/null
  shaper=netem
  if ! netns_shape netem delay "$delay" rate "$rate" limit 100000; then
    shaper=tbf
    bits=$(numfmt --from=si "$(r=${rate%bit}; echo "${r^^}")")
    burst=$(( bits / 8 / 250 ))   # 4 ms of the rate: enough for the kernel's timer granularity
    netns_shape tbf rate "$rate" burst "$burst" latency 50ms || { echo "cannot shape the link with tbf"; exit 1; }
    echo "note: this kernel has no netem qdisc: $rate with tbf, without the $delay delay"
  fi
  tag="${rate}_${delay}"
  fast_rank "$ns_a" 0 "$addr_a" a.key "$work/fast_a.csv" > "$OUT/fast_$tag.log" 2>&1 &
  pids+=($!)
  fast_rank "$ns_b" 1 "$addr_b" b.key "$work/fast_b.csv" >> "$OUT/fast_$tag.log" 2>&1 || echo "FAST failed: $OUT/fast_$tag.log"
  wait "${pids[-1]}"
  ip netns exec "$ns_a" timeout 600 mpirun -np 2 -H "$addr_a:1,$addr_b:1" --bind-to none \
    --mca plm rsh --mca plm_rsh_agent "$work/agent.sh" --mca oob_tcp_if_include 10.197.0.0/24 \
    --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include 10.197.0.0/24 \
    "$BIN/bench_allreduce_mpi" "${ARGS[@]}" --label mpi_tcp --out "$work/mpi.csv" > "$OUT/mpi_$tag.log" 2>&1 ||
    echo "MPI failed: $OUT/mpi_$tag.log"
  bytes_per_s=$(( $(numfmt --from=si "$(r=${rate%bit}; echo "${r^^}")") / 8 ))
  for f in "$work/fast_a.csv" "$work/mpi.csv"; do
    [ -f "$f" ] || continue
    awk -F, -v rate="$rate" -v delay="$delay" -v shaper="$shaper" -v link="$bytes_per_s" \
      'NR > 1 { printf "%s,%s,%s,%s,%s,%s,%.3f\n", rate, delay, shaper, $1, $3, $8, $8 * 1e9 / link }' "$f" >> "$OUT/link.csv"
  done
  rm -f "$work/fast_a.csv" "$work/fast_b.csv" "$work/mpi.csv"
done
python3 - "$OUT/link.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("| link | shaper | size | FAST (CURVE + AES-256-GCM) | OpenMPI tcp | FAST / MPI | goal >= 0.9 |")
print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
seen = {}
for r in rows:
    seen.setdefault((r["rate"], r["delay"], r["shaper"], int(r["bytes"])), {})[r["impl"]] = float(r["link_fraction"])
for (rate, delay, shaper, size), v in sorted(seen.items(), key=lambda k: (k[0][0], k[0][3])):
    f, m = v.get("fast"), v.get("mpi_tcp")
    ratio = f / m if f and m else None
    cell = lambda x: f"{x:.2f}" if x is not None else "-"
    verdict = "-" if ratio is None else ("met" if ratio >= 0.9 else "missed")
    print(f"| {rate} {'+ ' + delay if shaper == 'netem' else '(no delay)'} | {shaper} | {size >> 20} MiB | {cell(f)} | {cell(m)} | {cell(ratio)} | {verdict} |")
PY
