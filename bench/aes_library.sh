#!/usr/bin/env bash
# (e), the AES library: the encrypted tcp path between processes of one host (no shared memory,
# FAST_TRANSPORT=tcp FAST_SHM_BYTES=0, as between hosts) with AES-256-GCM from Intel's ipsec-mb
# (FAST_AES_LIBRARY=auto, where the build has it) and from OpenSSL's libcrypto
# (FAST_AES_LIBRARY=openssl), the same binary, and OpenMPI tcp (pml ob1, btl tcp,self on lo), in one
# run: REPS repetitions in rotating order, 2 and 4 processes, 1-64 MiB (x4). Prints each one's
# median bus bandwidth (GB/s) and the ratios; the CSVs stay in OUT_DIR. docs/benchmarks.md, (e).
# Usage: aes_library.sh BIN_DIR OUT_DIR [REPS]   (default 3)
set -u
BIN=$(cd "$1" && pwd)
OUT=$2
REPS=${3:-3}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ARGS=(--min-bytes 1M --max-bytes 64M --factor 4 --budget-bytes 512M --max-iters 2000 --min-iters 8)
kinds=(openssl auto mpi)
for rep in $(seq 1 "$REPS"); do
  for n in 2 4; do
    for i in 0 1 2; do
      k=${kinds[$(((i + rep - 1) % 3))]}
      name="$OUT/${k}_n${n}_r$rep"
      if [ "$k" = mpi ]; then
        timeout 1200 mpirun -np "$n" --bind-to none --oversubscribe --mca pml ob1 --mca btl tcp,self \
          --mca btl_tcp_if_include lo "$BIN/bench_allreduce_mpi" "${ARGS[@]}" --label mpi_tcp --out "$name.csv" \
          > "$name.log" 2>&1
      else
        FAST_AES_LIBRARY=$k FAST_TRANSPORT=tcp FAST_SHM_BYTES=0 timeout 1200 "$BIN/fast" launch -n "$n" --timeout 1100 \
          -- "$BIN/bench_allreduce_fast" --runtime zmq "${ARGS[@]}" --label "$k" --out "$name.csv" > "$name.log" 2>&1
      fi
      rc=$?
      if [ $rc != 0 ]; then echo "aes_library.sh: $k with $n processes failed (exit $rc); see $name.log" >&2; exit 1; fi
    done
  done
done
python3 - "$OUT" <<'PY'
import collections, csv, glob, statistics, sys
bw = collections.defaultdict(list)
for f in glob.glob(sys.argv[1] + "/*.csv"):
    for r in csv.DictReader(open(f)):
        bw[(r["impl"], int(r["ranks"]), int(r["bytes"]))].append(float(r["busbw_GBps"]))
print("| processes | size | MPI tcp | FAST libcrypto | FAST ipsec-mb | ipsec-mb / libcrypto | ipsec-mb / MPI tcp |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for n in (2, 4):
    for b in sorted({k[2] for k in bw if k[1] == n}):
        m, o, a = (statistics.median(bw[(impl, n, b)]) for impl in ("mpi_tcp", "openssl", "auto"))
        print(f"| {n} | {b >> 20} MiB | {m:.3f} | {o:.3f} | {a:.3f} | {a / o:.2f}x | {a / m:.2f}x |")
PY
