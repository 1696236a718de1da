#!/usr/bin/env bash
# `pip install --no-build-isolation .` as a user does it from a clone (pyproject.toml, setup.py): into a
# fresh venv of Debian's python3 (--system-site-packages: its torch and numpy), reusing this build
# folder (FAST_BUILD_DIR) so that nothing is compiled again. Then, from the venv alone (no
# PYTHONPATH): `fast --version` and fast.__version__ print the same version, that of
# CMakeLists.txt; `fast launch -n 2 -- python examples/python/train_fmnist.py` (20 steps) trains
# one run of 2 workers whose summary records that version. Skips (77) without python3-venv or the
# Fashion-MNIST files. Every step is bounded in time (timeout kills it and its children).
#
# Usage: pip_install_test.sh SOURCE_DIR BUILD_DIR
set -u
if [ $# -ne 2 ]; then
  echo "usage: $0 SOURCE_DIR BUILD_DIR" >&2
  exit 2
fi
source="$1" build="$2"
python=/usr/bin/python3
data="${FAST_DATA_DIR:-/usr/share/datasets/fashion-mnist}"
"$python" -c "import ensurepip, venv" 2>/dev/null || { echo "SKIP: $python has no venv module (python3-venv)"; exit 77; }
[ -f "$data/train-images-idx3-ubyte.gz" ] || { echo "SKIP: no Fashion-MNIST in '$data'"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fast-pip-test.XXXXXX") || exit 1
step_pid=""
cleanup() {
  [ -n "$step_pid" ] && kill "$step_pid" 2>/dev/null && wait "$step_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT
unset PYTHONPATH

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# run_step NAME SECONDS COMMAND...: COMMAND under timeout, its output in TMP/NAME.log; on failure
# prints the log's end and fails naming the step.
run_step() {
  local name="$1" seconds="$2"
  shift 2
  timeout -k 10 "$seconds" "$@" > "$tmp/$name.log" 2>&1 &
  step_pid=$!
  wait "$step_pid"
  local rc=$?
  step_pid=""
  if [ "$rc" -ne 0 ]; then
    tail -n 40 "$tmp/$name.log" >&2
    [ "$rc" -eq 124 ] && fail "$name: did not finish within $seconds s"
    fail "$name: exit status $rc (output above)"
  fi
}

venv="$tmp/venv"
run_step venv 120 "$python" -m venv --system-site-packages "$venv"
run_step pip-install 600 env FAST_BUILD_DIR="$build" "$venv/bin/python" -m pip install --no-build-isolation \
  --no-deps --no-index --disable-pip-version-check "$source"
[ -x "$venv/bin/fast" ] || fail "pip install put no executable 'fast' in $venv/bin"

expected=$(sed -n 's/^project(fast VERSION \([0-9.]*\).*/\1/p' "$source/CMakeLists.txt")
[ -n "$expected" ] || fail "no project(fast VERSION ...) in $source/CMakeLists.txt"
run_step version 30 "$venv/bin/fast" --version
command_version=$(head -n 1 "$tmp/version.log")
case "$command_version" in
  "fast $expected" | "fast $expected ("*")") ;;
  *) fail "fast --version printed '$command_version', expected 'fast $expected' (and the commit)" ;;
esac
cd "$tmp" || exit 1  # not the source folder: `import fast` must find the installed package
run_step import 60 "$venv/bin/python" -c "import fast; print(fast.__version__); print(fast.__file__)"
module_version=$(sed -n 1p "$tmp/import.log")
module_file=$(sed -n 2p "$tmp/import.log")
[ "$module_version" = "$expected" ] || fail "fast.__version__ is '$module_version', expected '$expected'"
case "$module_file" in
  "$venv"/*) ;;
  *) fail "import fast found '$module_file', not the package installed in $venv" ;;
esac

run_step train 300 env PATH="$venv/bin:$PATH" FAST_DATA_DIR="$data" fast launch -n 2 --timeout 240 -- \
  python "$source/examples/python/train_fmnist.py" --epochs 1 --steps-per-epoch 20 --summary "$tmp/s.json"
"$python" - "$tmp/s.json" "$expected" <<'PY' || fail "the summary of the installed package's run (above)"
import json, sys
s = json.load(open(sys.argv[1]))
print({k: s.get(k) for k in ("workers", "steps", "fast_version", "fast_commit", "final_accuracy")})
assert s["workers"] == 2, s["workers"]
assert s["fast_version"] == sys.argv[2], s["fast_version"]
assert s["final_accuracy"] > 0.2, s["final_accuracy"]  # 20 steps of 2 workers: far above chance (0.1)
PY
echo "PASS: pip-installed into a venv; fast --version and fast.__version__ say $expected; 2 processes trained"
