#!/usr/bin/env bash
# The GPU checks (docs/gpu.md, "Checks"), in one run on a machine with a CUDA GPU and a
# pip-installed torch with CUDA, with .gpu/ from bench/gpu/fetch-deps.sh carried along. It unpacks
# the packages under /tmp/deps, builds FAST against the pip torch (FAST_MINIMAL plus ZeroMQ), runs the
# device path's unit tests, trains the cnn with 2 workers on one GPU (threads) and with 2 processes on
# one GPU (zmq), compares 1 worker with a plain libtorch loop on the GPU in the same run, and times the
# device codecs. Every result lands in $OUT (else build-gpu/gpu-check): logs, summaries, CSVs.
# usage: bench/gpu/check.sh [quick]    (quick: short runs, to try the script itself, e.g. on a CPU
#                                       with GPU_CHECK_DEVICE=cpu)
# GPU_CHECK_DEVICE (default cuda:0), GPU_CHECK_CMAKE_FLAGS (more configure flags, e.g. a compiler launcher).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
RES=${OUT:-$ROOT/build-gpu/gpu-check}
DEVICE=${GPU_CHECK_DEVICE:-cuda:0}
QUICK=${1:-}
DEPS=/tmp/deps
BUILD=$ROOT/build-gpu
mkdir -p "$RES" "$DEPS"
log() { echo "== $*" | tee -a "$RES/check.log"; }

[[ -d .gpu/debs ]] || { echo "check.sh: .gpu/debs missing: run bench/gpu/fetch-deps.sh first and carry .gpu" >&2; exit 1; }
for f in .gpu/debs/*.deb; do dpkg -x "$f" "$DEPS"; done
LIBDIR=$DEPS/usr/lib/x86_64-linux-gnu
sed -i '/^Requires.private/d' "$LIBDIR/pkgconfig/libzmq.pc"  # only for static linking; its .pc files are not carried
export PATH=$DEPS/usr/bin:$PATH PKG_CONFIG_PATH=$LIBDIR/pkgconfig:$DEPS/usr/share/pkgconfig PKG_CONFIG_SYSROOT_DIR=$DEPS
export LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FAST_DATA_DIR=$ROOT/.gpu/fashion-mnist

log "machine"
{ nvidia-smi || true; python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
  "gpus", torch.cuda.device_count(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' || true
  nproc; g++ --version | head -1; cmake --version | head -1; } 2>&1 | tee "$RES/machine.txt"

log "build"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFAST_MINIMAL=ON -DFAST_WITH_ZMQ=ON -DFAST_WITH_PYTHON=OFF \
      -DFAST_BUILD_BENCH=ON -DCMAKE_PREFIX_PATH="$DEPS/usr" ${GPU_CHECK_CMAKE_FLAGS:-} > "$RES/configure.log" 2>&1 || { tail -40 "$RES/configure.log"; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" --target fast bench_plain_loop bench_device_codecs torch_adapter_test \
      > "$RES/build.log" 2>&1 || { grep -m 20 -A 5 'error' "$RES/build.log"; exit 1; }
BIN=$BUILD/bin

log "unit tests of the device path"
"$BIN/torch_adapter_test" --gtest_filter='*Staged*:Device*:*DeviceEncoder*:Pack.*' 2>&1 | tail -5 | tee -a "$RES/check.log"

EPOCHS=2; STEPS=1500; REPS=3
[[ $QUICK == quick ]] && { EPOCHS=1; STEPS=100; REPS=1; }
log "acceptance 1: cnn, 2 workers on one GPU (threads), $EPOCHS epochs"
"$BIN/fast" train --device "$DEVICE" --model cnn --workers 2 --epochs "$EPOCHS" --progress never \
  --summary "$RES/cnn_threads.json" 2>&1 | tail -3 | tee -a "$RES/check.log"
log "acceptance 1: cnn, 2 processes on one GPU (zmq), $EPOCHS epochs"
"$BIN/fast" launch -n 2 -- "$BIN/fast" train --runtime zmq --device "$DEVICE" --model cnn --epochs "$EPOCHS" \
  --progress never --summary "$RES/cnn_zmq.json" 2>&1 | tail -3 | tee -a "$RES/check.log"

log "acceptance 2: 1 worker through FAST against a plain libtorch loop, same run, $REPS alternations"
for model in mlp cnn; do
  for r in $(seq "$REPS"); do
    "$BIN/bench_plain_loop" --device "$DEVICE" --model "$model" --steps "$STEPS" --warmup 50 \
      --out "$RES/plain_${model}_$r.json" > /dev/null
    "$BIN/fast" train --device "$DEVICE" --model "$model" --workers 1 --steps "$STEPS" --eval-every "$STEPS" \
      --optimizer momentum --momentum 0.9 --lr 0.05 --schedule constant --progress never \
      --summary "$RES/fast_${model}_$r.json" > /dev/null 2>&1
  done
  python3 - "$RES" "$model" "$REPS" <<'PY' | tee -a "$RES/check.log"
import json, statistics, sys
res, model, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
plain = [json.load(open(f"{res}/plain_{model}_{r}.json"))["samples_per_second"] for r in range(1, reps + 1)]
fast = [json.load(open(f"{res}/fast_{model}_{r}.json"))["samples_per_second"] for r in range(1, reps + 1)]
p, f = statistics.median(plain), statistics.median(fast)
print(f"{model}: plain {p:.0f} samples/s, FAST {f:.0f} samples/s, FAST/plain {f / p:.3f} (goal >= 0.95)")
PY
done

log "acceptance 2: device codecs on a 25 MB gradient (goal: topk:ratio=0.01 >= 20 GB/s)"
"$BIN/bench_device_codecs" --device "$DEVICE" --reps 9 --out "$RES/device_codecs.csv" 2>&1 | tee -a "$RES/check.log"
log "done: $RES"
