#!/usr/bin/env bash
# Runs FAST's benchmarks against their peers and prints one table per benchmark (FAST, peer, ratio).
#   (a) all-reduce bus bandwidth: FAST threads runtime (automatic choice and each algorithm) vs OpenMPI
#       MPI_Allreduce, 2 and 4 ranks
#   (b) framework overhead: `fast train --workers 1` vs a plain libtorch loop (bench_plain_loop)
#   (c) 2-worker throughput: `fast train --workers 2` vs PyTorch DDP over gloo (bench/ddp.py)
#   (d) codec throughput: encode + decode GB/s of each compression codec on a 25 MB gradient vs memcpy
#   (e) all-reduce bus bandwidth across processes, 2 and 4: FAST's zmq runtime (`fast launch`; tcp without
#       shared memory, CURVE and --insecure; the default with shared memory) vs OpenMPI (shared memory; tcp on
#       loopback) and torch.distributed gloo; then the emulated links (as root) and the encrypted path with
#       each AES library (bench/aes_library.sh)
#   (f) 2 processes: `fast launch -n 2 -- fast train --runtime zmq` vs PyTorch DDP over gloo (bench/ddp.py)
#   (g) all-reduce bus bandwidth through `--runtime mpi`, 2 and 4 ranks: the Communicator with MPI's native
#       collectives and with FAST's ring vs MPI_Allreduce called directly, all under mpirun; MPI_Allreduce
#       runs twice per repetition, and the second run / the first (A/A) shows the machine's own scatter
#   (h) one-sided windows under mpirun -np 2 (bench_window_mpi): FAST's windows on MPI RMA (the default) and
#       on the owner's service vs MPI RMA called directly, with the owner idle and computing (informs where
#       the mpi runtime's windows run; no goal); and the asynchronous strategies under `mpirun -np 4 fast
#       train --runtime mpi` with their windows on MPI RMA and on the service (samples/s, accuracy)
#   (j) 2 processes, training loop written in Python: fast.torch (bench/python_train.py) under
#       `fast launch -n 2` (zmq) and `mpirun -np 2` (mpi) vs PyTorch DDP over gloo (bench/ddp.py)
#   (k) churn soak (bench/churn_soak.py; no peer: the ratio is worker 0's resident memory at the last
#       kill over the first): an adpsgd run of 4 zmq processes, one killed every 30 s and started again
#       5 s later for 10 minutes (BENCH_QUICK: 1 minute, every 15 s); every restart must rejoin. Then the
#       same churn over ranks 0-2 on elastic allreduce and ps sync runs (--elastic) restarted by fast launch
#       --restart: every restart joins, 4 equal workers at the end, accuracy within 1 point of the run
#       without churn
#   (l) simulation at scale (bench/sim_scale.py): dpsgd on a torus of 256 and 1,024 simulated workers, mlp,
#       one epoch at >= 5 steps per worker vs the same samples trained by one worker under threads; the
#       256-worker run with sim_threads 1, 2, 4, ... up to the cores; each strategy's memory floor and peak
#       at 1,024 workers (BENCH_QUICK: 256)
# usage: bench/run.sh BUILD_DIR        (after building BUILD_DIR with -DFAST_BUILD_BENCH=ON; `make bench`)
# Raw results: BUILD_DIR/bench-results/raw/, tables: bench-results/*_summary.csv and summary.json.
# Methods and recorded figures: docs/benchmarks.md.
#
# Environment knobs (a-d with the defaults took 3 to 11 minutes on 2 busy cores; e and f add more):
#   BENCH_ONLY="a b c d e f g h j k l"  which benchmarks to run
#   BENCH_REPS=5           repetitions of each measurement (alternating FAST and peer); medians reported
#   BENCH_G_ROUNDS=10      rounds of (g)'s paired measurement (the goal's verdict), per rank count
#   BENCH_QUICK=1          a short smoke run (1 repetition, small sizes, few steps) to check the harness
#   BENCH_B_THREADS=2      libtorch intra-op threads for (b), both sides (FAST_TORCH_THREADS)
#   BENCH_CHUNKS=64K,256K,1M,4M   FAST chunk_bytes values tried in (a)
#   BENCH_OPENBLAS_THREADS=1  OPENBLAS_NUM_THREADS for (b), (c) and (f), both sides; "default" leaves OpenBLAS
#                          alone. libtorch's set_num_threads does not reach Debian's OpenBLAS (pthreads
#                          build), which otherwise runs a pool of one thread per core on top of libtorch's
#                          threads: "1 torch thread per worker" would not be one thread (docs/benchmarks.md).
#                          FAST's configure_torch_threads calls openblas_set_num_threads itself, which
#                          overrides this variable on the FAST side.
#   BENCH_E_PROCS="2 4"    process counts of (e)'s all-reduce sweeps
#   BENCH_E_LINKS=1        0: leave out (e)'s emulated links (bench/emulated_link.sh)
#   BENCH_PYTHON=/usr/bin/python3  the Python with torch for gloo, DDP and the reports
#   FAST_DATA_DIR          Fashion-MNIST folder (default /usr/share/datasets/fashion-mnist)
set -euo pipefail

die() { echo "bench/run.sh: error: $*" >&2; exit 1; }

[[ $# -eq 1 ]] || die "usage: bench/run.sh BUILD_DIR"
BUILD=$(cd "$1" 2>/dev/null && pwd) || die "build folder '$1' not found (build it first: make bench)"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$BUILD/bin
OUT=$BUILD/bench-results
RAW=$OUT/raw
PY=${BENCH_PYTHON:-/usr/bin/python3}   # Debian's python3 with python3-torch, not the first python3 on PATH
REPORT=("$PY" "$ROOT/bench/report.py")

ONLY=${BENCH_ONLY:-a b c d e f g h j k l}
REPS=${BENCH_REPS:-5}
G_ROUNDS=${BENCH_G_ROUNDS:-10}
QUICK=${BENCH_QUICK:-0}
E_PROCS=${BENCH_E_PROCS:-2 4}
B_THREADS=${BENCH_B_THREADS:-2}
CHUNKS=${BENCH_CHUNKS:-64K,256K,1M,4M}
DATA_DIR=${FAST_DATA_DIR:-/usr/share/datasets/fashion-mnist}
OPENBLAS=${BENCH_OPENBLAS_THREADS:-1}
if [[ $OPENBLAS == default ]]; then unset OPENBLAS_NUM_THREADS; else export OPENBLAS_NUM_THREADS=$OPENBLAS; fi
export FAST_DATA_DIR=$DATA_DIR

# Sizes and step counts: full run vs smoke run.
if [[ $QUICK == 1 ]]; then
  REPS=1
  G_ROUNDS=${BENCH_G_ROUNDS:-2}
  A_ARGS=(--max-bytes 4M --budget-bytes 32M --max-iters 200 --min-iters 3)
  B_STEPS_MLP=100; B_STEPS_CNN=10; C_STEPS_MLP=100; C_STEPS_CNN=10
  D_ARGS=(--n 655360 --rows 640 --reps 3)
  H_MAX_BYTES=65536
  H_TRAIN=(--steps 40)
else
  H_MAX_BYTES=16777216
  H_TRAIN=(--epochs 1)
  D_ARGS=(--n 6553600 --rows 2560 --reps 7)
  A_ARGS=(--max-bytes 64M --budget-bytes 512M --max-iters 2000 --min-iters 8)
  B_STEPS_MLP=2000; B_STEPS_CNN=300; C_STEPS_MLP=2000; C_STEPS_CNN=300
fi
BATCH=64
LAUNCH_TIMEOUT=1800  # seconds a `fast launch` of (e) or (f) may take before it is stopped (exit code 124)
LR=0.05
MOMENTUM=0.9

# ------------------------------------------------------------------ checks: fail clearly
need_file() { [[ -e $1 ]] || die "missing $1 ($2)"; }
# in_rep_order REP KIND...: prints the kinds one per line, reversed in even repetitions, so that a
# drift of the machine's load hits every kind alike.
in_rep_order() {
  local rep=$1 i; shift
  if (( rep % 2 == 0 )); then for (( i = $#; i >= 1; i-- )); do echo "${!i}"; done; else printf '%s\n' "$@"; fi
}
need_exe() { [[ -x $1 ]] || die "missing $1 ($2)"; }
wants() { [[ " $ONLY " == *" $1 "* ]]; }

if wants a; then
  need_exe "$BIN/bench_allreduce_fast" "build with -DFAST_BUILD_BENCH=ON: make bench"
  need_exe "$BIN/bench_allreduce_mpi" "build with -DFAST_BUILD_BENCH=ON: make bench"
  command -v mpirun >/dev/null || die "mpirun not found (Debian packages openmpi-bin libopenmpi-dev: make deps)"
fi
if wants e; then
  need_exe "$BIN/bench_pingpong_fast" "build with -DFAST_BUILD_BENCH=ON: make bench"
  need_exe "$BIN/bench_pingpong_mpi" "build with -DFAST_BUILD_BENCH=ON: make bench"
fi
if wants e || wants g; then
  need_exe "$BIN/bench_allreduce_fast" "build with -DFAST_BUILD_BENCH=ON: make bench"
  need_exe "$BIN/bench_allreduce_mpi" "build with -DFAST_BUILD_BENCH=ON: make bench"
  command -v mpirun >/dev/null || die "mpirun not found (Debian packages openmpi-bin libopenmpi-dev: make deps)"
fi
if wants j; then
  [[ -f $BUILD/python/fast/__init__.py ]] || die "missing $BUILD/python/fast (the Python package: FAST_WITH_PYTHON=ON, pybind11-dev)"
  command -v mpirun >/dev/null || die "mpirun not found (Debian packages openmpi-bin libopenmpi-dev: make deps)"
fi
if wants e || wants f || wants j; then
  need_exe "$BIN/fast" "the fast command (tools/fast) did not build"
  "$BIN/fast" launch --help >/dev/null 2>&1 || die "$BIN/fast launch --help failed"
fi
if wants b || wants c || wants f || wants h || wants l; then
  need_exe "$BIN/fast" "the fast command (tools/fast) did not build"
  "$BIN/fast" train --help >/dev/null 2>&1 || die "$BIN/fast train --help failed"
  for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
    need_file "$DATA_DIR/$f" "Fashion-MNIST: Debian package dataset-fashion-mnist, or set FAST_DATA_DIR"
  done
fi
if wants b; then need_exe "$BIN/bench_plain_loop" "build with -DFAST_BUILD_BENCH=ON: make bench"; fi
if wants d; then need_exe "$BIN/bench_codec_throughput" "build with -DFAST_BUILD_BENCH=ON: make bench"; fi
need_exe "$PY" "Debian's python3"
"$PY" -c 'import numpy' 2>/dev/null || die "$PY cannot import numpy"
if wants c || wants e || wants f || wants j; then
  "$PY" -c 'import torch, torch.distributed as d; assert d.is_available() and d.is_gloo_available()' 2>/dev/null \
    || die "$PY cannot import torch with gloo (Debian package python3-torch: make deps)"
fi

# mpirun refuses root unless told; only set when we are root.
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

rm -rf "$OUT"
mkdir -p "$RAW"
LOG=$OUT/log.txt
: >"$LOG"
T_START=$SECONDS
note() { printf '[%4ds] %s\n' $((SECONDS - T_START)) "$*" | tee -a "$LOG"; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
# run NAME CMD...: runs CMD with its output in raw/NAME.log and the load before it in raw/NAME.load.
run() {
  local name=$1; shift
  loadavg >"$RAW/$name.load"
  if ! "$@" >"$RAW/$name.log" 2>&1; then
    echo "---- $RAW/$name.log" >&2; tail -20 "$RAW/$name.log" >&2
    die "benchmark step '$name' failed: $*"
  fi
}

"$PY" - "$OUT/meta.json" "$ROOT" "$REPS" "$QUICK" "$OPENBLAS" "$B_THREADS" <<'EOF'
import json, os, platform, subprocess, sys, time
out, root, reps, quick, openblas, b_threads = sys.argv[1:7]
def sh(cmd):
    try: return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception: return ""
meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "cores": os.cpu_count(),
        "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip(),
        "loadavg_start": open("/proc/loadavg").read().split()[:3], "reps": int(reps), "quick": quick == "1",
        "git": sh(f"git -C {root} rev-parse --short HEAD") + (" (dirty)" if sh(f"git -C {root} status --porcelain") else ""),
        "mpirun": sh("mpirun --version 2>&1 | head -1"), "python_torch": sh("/usr/bin/python3 -c 'import torch; print(torch.__version__)'"),
        "kernel": platform.release(), "openblas_num_threads": openblas, "b_torch_threads": int(b_threads)}
json.dump(meta, open(out, "w"), indent=2)
EOF
note "FAST benchmarks: build $BUILD, results $OUT; $(nproc) cores, load $(loadavg); reps $REPS$( [[ $QUICK == 1 ]] && echo ", quick smoke run")"
note "benchmarks: $ONLY; OPENBLAS_NUM_THREADS=$OPENBLAS for (b), (c) and (f)"

# ------------------------------------------------------------------ (a) all-reduce
if wants a; then
  note "(a) all-reduce bus bandwidth, 4 KiB..$( [[ $QUICK == 1 ]] && echo 4 || echo 64) MiB (x4), 2 and 4 ranks"
  note "    MPI: mpirun --bind-to none; 4 ranks also --oversubscribe (4 processes on $(nproc) cores)"
  note "    FAST: chunk_bytes $CHUNKS (default 4M)"
  for rep in $(seq 1 "$REPS"); do
    note "    rep $rep/$REPS: FAST (2 and 4 threads of one process)"
    run "a_fast_rep$rep" "$BIN/bench_allreduce_fast" --ranks 2,4 --chunks "$CHUNKS" \
      --algorithms auto,ring,recursive-doubling,halving-doubling,tree "${A_ARGS[@]}" --out "$RAW/a_fast_rep$rep.csv"
    note "    rep $rep/$REPS: OpenMPI, 2 ranks"
    run "a_mpi2_rep$rep" mpirun -np 2 --bind-to none "$BIN/bench_allreduce_mpi" "${A_ARGS[@]}" --out "$RAW/a_mpi2_rep$rep.csv"
    # Busy-polling ranks suffer badly when other processes compete for the cores; OpenMPI's
    # yield-when-idle mode (automatic when oversubscribed) is measured too, and FAST is judged
    # against the better of the two.
    note "    rep $rep/$REPS: OpenMPI, 2 ranks, --mca mpi_yield_when_idle 1"
    run "a_mpiyield2_rep$rep" mpirun -np 2 --bind-to none --mca mpi_yield_when_idle 1 "$BIN/bench_allreduce_mpi" \
      "${A_ARGS[@]}" --label mpi_yield --out "$RAW/a_mpiyield2_rep$rep.csv"
    note "    rep $rep/$REPS: OpenMPI, 4 ranks (--oversubscribe)"
    run "a_mpi4_rep$rep" mpirun -np 4 --oversubscribe --bind-to none "$BIN/bench_allreduce_mpi" "${A_ARGS[@]}" \
      --out "$RAW/a_mpi4_rep$rep.csv"
  done
  echo
  "${REPORT[@]}" allreduce "$OUT" | tee -a "$LOG"
  echo
fi

# ------------------------------------------------------------------ (b), (c), (f) training
# fast_train NAME WORKERS MODEL STEPS [RUNTIME]: one `fast train` run, its summary in raw/NAME.json.
# RUNTIME threads (default): WORKERS threads of one process; zmq: `fast launch -n WORKERS` processes of
# one worker each (the defaults: CURVE, shared memory on one host), process 0 writes the summary.
fast_train() {
  local name=$1 workers=$2 model=$3 steps=$4 runtime=${5:-threads}
  local cmd=("$BIN/fast" train --workers "$workers")
  if [[ $runtime == zmq ]]; then
    cmd=("$BIN/fast" launch -n "$workers" --timeout "$LAUNCH_TIMEOUT" -- "$BIN/fast" train --runtime zmq)
  fi
  # --eval-every STEPS: no evaluation inside the timed window (only the final one, after it).
  run "$name" "${cmd[@]}" --model "$model" --batch $BATCH --optimizer momentum \
    --momentum $MOMENTUM --lr $LR --steps "$steps" --eval-every "$steps" --progress never --summary "$RAW/$name.json"
  need_file "$RAW/$name.json" "fast train wrote no summary; see $RAW/$name.log"
}
show() { "$PY" -c 'import json, sys; print("%.0f samples/s" % json.load(open(sys.argv[1]))["samples_per_second"])' "$1"; }

if wants b; then
  note "(b) framework overhead: fast train --workers 1 vs plain libtorch loop; FAST_TORCH_THREADS=$B_THREADS for both"
  for model in mlp cnn; do
    steps=$B_STEPS_MLP; [[ $model == cnn ]] && steps=$B_STEPS_CNN
    for rep in $(seq 1 "$REPS"); do
      # Alternate which side goes first, so slow drifts in load hit both equally.
      order=(plain fast); (( rep % 2 == 0 )) && order=(fast plain)
      for side in "${order[@]}"; do
        name="b_${model}_${side}_rep$rep"
        if [[ $side == plain ]]; then
          run "$name" env FAST_TORCH_THREADS="$B_THREADS" "$BIN/bench_plain_loop" --model "$model" --batch $BATCH \
            --lr $LR --momentum $MOMENTUM --steps "$steps" --warmup $((steps / 10)) --out "$RAW/$name.json"
        else
          FAST_TORCH_THREADS=$B_THREADS fast_train "$name" 1 "$model" "$steps"
        fi
        note "    $model rep $rep/$REPS $side ($steps steps): $(show "$RAW/$name.json")"
      done
    done
  done
  echo
  "${REPORT[@]}" overhead "$OUT" | tee -a "$LOG"
  echo
fi

# train_vs_ddp PREFIX RUNTIME: 2 workers of `fast train` on RUNTIME (threads: (c), zmq: (f)) against
# bench/ddp.py, alternating which goes first; raw/PREFIX_<model>_{fast,ddp}_rep<k>.json.
train_vs_ddp() {
  local prefix=$1 runtime=$2 model steps rep side name order
  for model in mlp cnn; do
    steps=$C_STEPS_MLP; [[ $model == cnn ]] && steps=$C_STEPS_CNN
    for rep in $(seq 1 "$REPS"); do
      order=(ddp fast); (( rep % 2 == 0 )) && order=(fast ddp)
      for side in "${order[@]}"; do
        name="${prefix}_${model}_${side}_rep$rep"
        if [[ $side == ddp ]]; then
          run "$name" "$PY" "$ROOT/bench/ddp.py" --model "$model" --workers 2 --batch $BATCH --lr $LR \
            --momentum $MOMENTUM --steps "$steps" --warmup $((steps / 10)) --threads 1 --data-dir "$DATA_DIR" \
            --out "$RAW/$name.json"
        else
          FAST_TORCH_THREADS=1 fast_train "$name" 2 "$model" "$steps" "$runtime"
        fi
        note "    $model rep $rep/$REPS $side ($steps steps/worker): $(show "$RAW/$name.json")"
      done
    done
  done
}

if wants c; then
  note "(c) 2 workers: fast train --workers 2 (FAST_TORCH_THREADS=1) vs PyTorch DDP/gloo, 2 processes x 1 thread"
  train_vs_ddp c threads
  echo
  "${REPORT[@]}" ddp "$OUT" | tee -a "$LOG"
  echo
fi

if wants d; then
  note "(d) codec throughput: encode + decode of a 25 MB f32 gradient per codec vs memcpy, ${D_ARGS[*]}"
  for rep in $(seq 1 "$REPS"); do
    run "d_codec_rep$rep" "$BIN/bench_codec_throughput" "${D_ARGS[@]}" --out "$RAW/d_codec_rep$rep.csv"
    note "    rep $rep/$REPS done"
  done
  echo
  "${REPORT[@]}" codec "$OUT" | tee -a "$LOG"
  echo
fi

# ------------------------------------------------------------------ (e) all-reduce across processes
# e_step KIND N REP: one sweep of (e) with N processes, its CSV in raw/e_KIND_nN_repREP.csv (impl column KIND).
#   fast_zmq_tcp[_insecure]: fast launch -n N [--insecure], FAST_TRANSPORT=tcp, FAST_SHM_BYTES=0: the data
#     through the direct TCP streams over loopback (AES-256-GCM, or a checksum with --insecure), as between hosts
#   fast_zmq_shm: fast launch -n N, FAST's default on one host: payloads from 4 KiB in shared memory
#   mpi_shm: mpirun's defaults (shared memory, btl vader); mpi_tcp: pml ob1 over btl tcp,self, on lo only
#   gloo: bench/allreduce_gloo.py, N spawned processes on 127.0.0.1
e_step() {
  local kind=$1 n=$2 rep=$3 name="e_$1_n$2_rep$3" mpi=(mpirun -np "$2" --bind-to none)
  if (( n > $(nproc) )); then mpi+=(--oversubscribe); fi
  case $kind in
    fast_zmq_*)
      local ring=0 secure=()
      if [[ $kind == *_insecure ]]; then secure=(--insecure); fi
      if [[ $kind == fast_zmq_shm ]]; then ring=-1; fi  # the default: automatic
      run "$name" env FAST_TRANSPORT=tcp FAST_SHM_BYTES=$ring "$BIN/fast" launch -n "$n" "${secure[@]}" \
        --timeout "$LAUNCH_TIMEOUT" \
        -- "$BIN/bench_allreduce_fast" --runtime zmq "${A_ARGS[@]}" --label "$kind" --out "$RAW/$name.csv" ;;
    mpi_shm)
      run "$name" "${mpi[@]}" "$BIN/bench_allreduce_mpi" "${A_ARGS[@]}" --label "$kind" --out "$RAW/$name.csv" ;;
    mpi_tcp)
      run "$name" "${mpi[@]}" --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo \
        "$BIN/bench_allreduce_mpi" "${A_ARGS[@]}" --label "$kind" --out "$RAW/$name.csv" ;;
    gloo)
      run "$name" "$PY" "$ROOT/bench/allreduce_gloo.py" --ranks "$n" "${A_ARGS[@]}" --label "$kind" \
        --out "$RAW/$name.csv" ;;
    *) die "e_step: unknown kind '$kind'" ;;
  esac
  need_file "$RAW/$name.csv" "no results; see $RAW/$name.log"
}

# pp_step KIND REP: (e)'s ping-pong between 2 processes, its CSV in raw/pp_KIND_repREP.csv.
pp_step() {
  local kind=$1 rep=$2 name="pp_$1_rep$2"
  case $kind in
    fast_pp) run "$name" env FAST_TRANSPORT=tcp "$BIN/fast" launch -n 2 --timeout "$LAUNCH_TIMEOUT" \
               -- "$BIN/bench_pingpong_fast" --label "$kind" --out "$RAW/$name.csv" ;;
    mpi_pp) run "$name" mpirun -np 2 --bind-to none "$BIN/bench_pingpong_mpi" --label "$kind" --out "$RAW/$name.csv" ;;
    *) die "pp_step: unknown kind '$kind'" ;;
  esac
  need_file "$RAW/$name.csv" "no results; see $RAW/$name.log"
}

if wants e; then
  note "(e) all-reduce across processes, 4 KiB..$( [[ $QUICK == 1 ]] && echo 4 || echo 64) MiB (x4), $E_PROCS processes"
  note "    FAST: fast launch -n N -- bench_allreduce_fast --runtime zmq (chunk_bytes 4M); tcp without shared memory (CURVE | --insecure), and the default (shared memory, CURVE)"
  note "    MPI: mpirun --bind-to none (--oversubscribe above $(nproc)); shared memory (defaults) | --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo"
  note "    gloo: torch.distributed all_reduce, N processes on 127.0.0.1 (bench/allreduce_gloo.py)"
  note "    ping-pong: fast launch -n 2 -- bench_pingpong_fast (defaults) | mpirun -np 2 bench_pingpong_mpi, 4 KiB and 1 MiB"
  E_KINDS=(fast_zmq_tcp mpi_tcp gloo fast_zmq_shm mpi_shm fast_zmq_tcp_insecure)
  for rep in $(seq 1 "$REPS"); do
    mapfile -t kinds < <(in_rep_order "$rep" "${E_KINDS[@]}")
    for n in $E_PROCS; do
      for kind in "${kinds[@]}"; do
        note "    rep $rep/$REPS: $kind, $n processes"
        e_step "$kind" "$n" "$rep"
      done
    done
    mapfile -t kinds < <(in_rep_order "$rep" fast_pp mpi_pp)
    for kind in "${kinds[@]}"; do
      note "    rep $rep/$REPS: ping-pong, $kind"
      pp_step "$kind" "$rep"
    done
  done
  echo
  "${REPORT[@]}" processes "$OUT" | tee -a "$LOG"
  echo
  # The same on emulated links between two network namespaces (needs root; skipped otherwise).
  if [[ ${BENCH_E_LINKS:-1} == 0 ]]; then
    note "(e) emulated links: skipped (BENCH_E_LINKS=0)"
  elif [[ $(id -u) == 0 ]]; then
    note "(e) emulated links: bench/emulated_link.sh (veth pair shaped by tc, 1 and 10 Gbit/s; FAST with CURVE vs OpenMPI tcp)"
    link_rc=0
    "$ROOT/bench/emulated_link.sh" "$BIN" "$OUT/link" | tee -a "$LOG" || link_rc=$?
    if (( link_rc == 77 )); then note "(e) emulated links: skipped (network namespaces cannot be created here)"
    elif (( link_rc != 0 )); then die "bench/emulated_link.sh failed (exit $link_rc)"; fi
    echo
  else
    note "(e) emulated links: skipped (network namespaces need root)"
  fi
  note "(e) the AES library: bench/aes_library.sh (the encrypted tcp path with ipsec-mb and with libcrypto, and OpenMPI tcp)"
  "$ROOT/bench/aes_library.sh" "$BIN" "$OUT/aes" "$REPS" | tee -a "$LOG" || die "bench/aes_library.sh failed"
  echo
fi

# ------------------------------------------------------------------ (f) 2 processes vs DDP
if wants f; then
  note "(f) 2 processes: fast launch -n 2 -- fast train --runtime zmq (CURVE, shared memory: the defaults on one host; FAST_TORCH_THREADS=1) vs PyTorch DDP/gloo, 2 processes x 1 thread"
  train_vs_ddp f zmq
  echo
  "${REPORT[@]}" ddp_zmq "$OUT" | tee -a "$LOG"
  echo
fi

# ------------------------------------------------------------------ (g) all-reduce through the mpi runtime
# g_step KIND N REP: one sweep of (g) with N ranks under mpirun, its CSV in raw/g_KIND_nN_repREP.csv.
#   mpi_direct[_multiple]: bench_allreduce_mpi (MPI_Init | MPI_Init_thread MULTIPLE);
#   mpi_direct_again: mpi_direct run once more in the same repetition (an A/A comparison);
#   fast_mpi_native | fast_mpi_fast: bench_allreduce_fast --runtime mpi --collectives native | fast
g_step() {
  local kind=$1 n=$2 rep=$3 name="g_$1_n$2_rep$3" mpi=(timeout -k 10 "$LAUNCH_TIMEOUT" mpirun -np "$2" --bind-to none)
  if (( n > $(nproc) )); then mpi+=(--oversubscribe); fi
  case $kind in
    mpi_direct | mpi_direct_again)
      run "$name" "${mpi[@]}" "$BIN/bench_allreduce_mpi" "${A_ARGS[@]}" --label "$kind" --out "$RAW/$name.csv" ;;
    mpi_direct_multiple)  # the same, initialised with MPI_THREAD_MULTIPLE as FAST's mpi runtime is
      run "$name" env BENCH_MPI_THREAD_MULTIPLE=1 "${mpi[@]}" "$BIN/bench_allreduce_mpi" "${A_ARGS[@]}" --label "$kind" \
        --out "$RAW/$name.csv" ;;
    fast_mpi_native | fast_mpi_fast)
      run "$name" "${mpi[@]}" "$BIN/bench_allreduce_fast" --runtime mpi --collectives "${kind#fast_mpi_}" "${A_ARGS[@]}" \
        --label "$kind" --out "$RAW/$name.csv" ;;
    *) die "g_step: unknown kind '$kind'" ;;
  esac
  need_file "$RAW/$name.csv" "no results; see $RAW/$name.log"
}

if wants g; then
  note "(g) all-reduce through --runtime mpi, 4 KiB..$( [[ $QUICK == 1 ]] && echo 4 || echo 64) MiB (x4), 2 and 4 ranks"
  note "    mpirun --bind-to none (--oversubscribe above $(nproc)); MPI_Allreduce direct (MPI_Init | THREAD_MULTIPLE) | FAST native | FAST ring (chunk 4M) | MPI_Allreduce direct again (A/A)"
  G_KINDS=(mpi_direct mpi_direct_multiple fast_mpi_native fast_mpi_fast mpi_direct_again)
  for rep in $(seq 1 "$REPS"); do
    mapfile -t kinds < <(in_rep_order "$rep" "${G_KINDS[@]}")
    for n in 2 4; do
      for kind in "${kinds[@]}"; do
        note "    rep $rep/$REPS: $kind, $n ranks"
        g_step "$kind" "$n" "$rep"
      done
    done
  done
  # The goal's verdict: MPI_Allreduce direct and through FAST, taking turns in the same processes
  # (bench/allreduce_mpi_paired.cpp), BENCH_G_ROUNDS rounds per rank count.
  need_exe "$BIN/bench_allreduce_mpi_paired" "build with OpenMPI"
  for n in 2 4; do
    note "(g) paired: MPI_Allreduce direct, FAST native, FAST ring, direct again in one mpirun, $G_ROUNDS rounds, $n ranks"
    mpi=(timeout -k 10 "$LAUNCH_TIMEOUT" mpirun -np "$n" --bind-to none)
    if (( n > $(nproc) )); then mpi+=(--oversubscribe); fi
    run "gp_n$n" "${mpi[@]}" "$BIN/bench_allreduce_mpi_paired" --rounds "$G_ROUNDS" "${A_ARGS[@]}" --out "$RAW/gp_n$n.csv"
    need_file "$RAW/gp_n$n.csv" "no results; see $RAW/gp_n$n.log"
  done
  echo
  "${REPORT[@]}" mpi "$OUT" | tee -a "$LOG"
  echo
fi

# ------------------------------------------------------------------ (h) one-sided windows under mpi
# h_<owner>_rep<k>.csv: bench_window_mpi under mpirun -np 2 (every implementation, alternating inside).
if wants h; then
  note "(h) one-sided windows under mpirun -np 2, 4 KiB..$((H_MAX_BYTES >> 10)) KiB (x4): FAST on MPI RMA | FAST service | MPI RMA direct; owner idle and computing"
  need_exe "$BIN/bench_window_mpi" "build with OpenMPI"
  for rep in $(seq 1 "$REPS"); do
    for owner in idle busy; do
      name="h_${owner}_rep$rep"
      note "    rep $rep/$REPS: owner $owner"
      run "$name" timeout -k 10 "$LAUNCH_TIMEOUT" mpirun -np 2 --bind-to none "$BIN/bench_window_mpi" --reps 1 \
        --max-bytes "$H_MAX_BYTES" --owner "$owner" --out "$RAW/$name.csv"
      need_file "$RAW/$name.csv" "no results; see $RAW/$name.log"
    done
  done
  # h_train_<strategy>_<windows>_rep<k>.json: summaries of 4-rank trainings, the two windows alternating.
  note "(h) asynchronous strategies, mlp, mpirun -np 4: windows on MPI RMA | on the service"
  mpi4=(timeout -k 10 "$LAUNCH_TIMEOUT" mpirun -np 4 --bind-to none -x FAST_WINDOWS)
  if (( 4 > $(nproc) )); then mpi4+=(--oversubscribe); fi
  for rep in $(seq 1 "$REPS"); do
    order=(rma service); if (( rep % 2 == 0 )); then order=(service rma); fi
    for tag in ps-async ps-ssp easgd adpsgd gosgd acid; do
      case $tag in
        ps-async) strategy="ps --mode async" ;;
        ps-ssp) strategy="ps --mode ssp --staleness 2" ;;
        easgd) strategy="easgd --tau 2 --alpha 0.1" ;;
        *) strategy=$tag ;;
      esac
      for windows in "${order[@]}"; do
        name="h_train_${tag}_${windows}_rep$rep"
        note "    rep $rep/$REPS: $strategy, windows $windows"
        # shellcheck disable=SC2086  # the strategy's words are separate arguments
        run "$name" env FAST_WINDOWS="$windows" "${mpi4[@]}" "$BIN/fast" train --runtime mpi --model mlp --seed 11 \
          --eval-every 0 --progress never --batch 64 "${H_TRAIN[@]}" --optimizer momentum --momentum 0.9 --lr 0.01 \
          --strategy $strategy --summary "$RAW/$name.json"
        need_file "$RAW/$name.json" "no summary; see $RAW/$name.log"
      done
    done
  done
  echo
  "${REPORT[@]}" windows "$OUT" | tee -a "$LOG"
  echo
fi

# ------------------------------------------------------------------ (j) Python loop vs DDP
# j_<model>_{zmq,mpi,ddp}_rep<k>.json: bench/python_train.py under fast launch (zmq) and mpirun (mpi),
# bench/ddp.py, in an order that rotates with the repetition.
if wants j; then
  note "(j) 2 processes, Python training loop: fast.torch under fast launch -n 2 (zmq, CURVE, shared memory) and mpirun -np 2 (mpi) vs PyTorch DDP/gloo; 1 torch thread per process"
  for model in mlp cnn; do
    steps=$C_STEPS_MLP; [[ $model == cnn ]] && steps=$C_STEPS_CNN
    common=(--model "$model" --batch $BATCH --lr $LR --momentum $MOMENTUM --steps "$steps" --warmup $((steps / 10))
            --threads 1 --data-dir "$DATA_DIR")
    for rep in $(seq 1 "$REPS"); do
      case $((rep % 3)) in 1) order=(ddp zmq mpi) ;; 2) order=(zmq mpi ddp) ;; *) order=(mpi ddp zmq) ;; esac
      for side in "${order[@]}"; do
        name="j_${model}_${side}_rep$rep"
        case $side in
          ddp) run "$name" "$PY" "$ROOT/bench/ddp.py" --workers 2 "${common[@]}" --out "$RAW/$name.json" ;;
          zmq) run "$name" env PYTHONPATH="$BUILD/python" "$BIN/fast" launch -n 2 --timeout "$LAUNCH_TIMEOUT" -- \
                 "$PY" "$ROOT/bench/python_train.py" "${common[@]}" --out "$RAW/$name.json" ;;
          mpi) run "$name" env PYTHONPATH="$BUILD/python" timeout -k 10 "$LAUNCH_TIMEOUT" mpirun -np 2 --bind-to none \
                 -x PYTHONPATH "$PY" "$ROOT/bench/python_train.py" "${common[@]}" --out "$RAW/$name.json" ;;
        esac
        need_file "$RAW/$name.json" "no result; see $RAW/$name.log"
        note "    $model rep $rep/$REPS $side ($steps steps/worker): $(show "$RAW/$name.json")"
      done
    done
  done
  echo
  "${REPORT[@]}" python_zmq "$OUT" | tee -a "$LOG"
  "${REPORT[@]}" python_mpi "$OUT" | tee -a "$LOG"
  echo
fi

# ------------------------------------------------------------------ (k) churn soak
if wants k; then
  note "(k) churn soak: adpsgd, 4 zmq processes, a kill (SIGKILL) and a restart after 5 s, round robin over ranks 1-3"
  soak=(--minutes 10 --period 30)
  [[ $QUICK == 1 ]] && soak=(--minutes 1 --period 15)
  run k_churn_soak "$PY" "$ROOT/bench/churn_soak.py" --fast "$BIN/fast" "${soak[@]}" --out "$RAW/k_churn_soak.json"
  tail -n 4 "$RAW/k_churn_soak.log" | tee -a "$LOG"
  elastic=(--epochs 110)
  [[ $QUICK == 1 ]] && elastic=(--epochs 12)
  for s in allreduce ps; do
    note "(k) elastic churn soak: $s --elastic, 4 zmq processes, a kill (SIGKILL) every period over ranks 0-2, fast launch --restart"
    run k_elastic_soak_$s "$PY" "$ROOT/bench/churn_soak.py" --fast "$BIN/fast" --elastic --strategy $s "${soak[@]}" \
      "${elastic[@]}" --out "$RAW/k_elastic_soak_$s.json"
    tail -n 2 "$RAW/k_elastic_soak_$s.log" | tee -a "$LOG"
  done
  echo
fi

# ------------------------------------------------------------------ (l) simulation at scale
if wants l; then
  note "(l) simulation at scale: dpsgd on a torus of simulated workers vs the same samples on one worker; compute threads; memory per strategy"
  scale=(--workers 256,1024)
  [[ $QUICK == 1 ]] && scale=(--workers 256 --memory-workers 256)
  run l_sim_scale "$PY" "$ROOT/bench/sim_scale.py" --fast "$BIN/fast" --root "$ROOT" "${scale[@]}" --out "$RAW/l_sim_scale.json"
  grep -E '^\||^(MET|MISSED)| workers, wall of each run' "$RAW/l_sim_scale.log" | tee -a "$LOG"
  echo
fi

note "done; load $(loadavg)"
echo "================================ summary"
"${REPORT[@]}" all "$OUT" | tee "$OUT/verdicts.txt"
