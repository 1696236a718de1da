#!/usr/bin/env bash
# `pip install --no-build-isolation .` as a user does it from a clone (pyproject.toml, setup.py): into a
# fresh venv of Debian's python3 (--system-site-packages: its torch and numpy), reusing this build
# folder (FAST_BUILD_DIR, named by a path outside the sources) so that nothing is compiled again;
# pip writes nothing among the sources (fast.egg-info). Then, from the venv alone (no
# PYTHONPATH): `fast --version` and fast.__version__ print the same version, that of
# CMakeLists.txt; `fast launch -n 2 -- python examples/python/train_fmnist.py` (its 2 epochs) trains
# one run of 2 workers to the example's accuracy (>= 0.85), whose summary records that version. Skips (77) without python3-venv or the
# Fashion-MNIST files. The installed programs and module search no library in the current directory
# (check_runpath). Every step is bounded in time (timeout kills it and its children).
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
TMP_PREFIX=fast-pip-test
. "$(dirname "$0")/steps.sh"
unset PYTHONPATH

# The interpreter the build's own Python tests run (tests/python): setup.py reconfigures a build
# whose interpreter is gone, which would point those tests at this test's venv, deleted at exit.
cached_python() { sed -n 's/^FAST_PYTHON_EXECUTABLE:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null; }
suite_python=$(cached_python)
[ -z "$suite_python" ] || [ -x "$suite_python" ] ||
  fail "$build/CMakeCache.txt names FAST_PYTHON_EXECUTABLE '$suite_python', which is gone: configure $build again first"

venv="$tmp/venv"
run_step venv 120 "$python" -m venv --system-site-packages "$venv"
# Without the tests' FAST_DATA_DIR (the build's copy of the data): a configure the build runs again
# must see the user's environment.
egg_info_before=$([ -e "$source/fast.egg-info" ] && echo yes)
# The build folder by a path outside the sources (a link to it), as a user's own build folder can be.
ln -s "$(cd "$build" && pwd)" "$tmp/build" || fail "cannot link $tmp/build to $build"
run_step pip-install 600 env -u FAST_DATA_DIR FAST_BUILD_DIR="$tmp/build" "$venv/bin/python" -m pip install --no-build-isolation \
  --no-deps --no-index --disable-pip-version-check "$source"
[ "$(cached_python)" = "$suite_python" ] ||
  fail "pip install changed $build's FAST_PYTHON_EXECUTABLE from '$suite_python' to '$(cached_python)'"
[ -n "$egg_info_before" ] || [ ! -e "$source/fast.egg-info" ] || fail "pip install wrote $source/fast.egg-info among the sources"
[ -x "$venv/bin/fast" ] || fail "pip install put no executable 'fast' in $venv/bin"
check_runpath "$venv/bin/fast" "$venv/libexec/fast/fast-train" "$venv"/lib/python3*/site-packages/fast/_fast*.so

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

run_step train 600 env PATH="$venv/bin:$PATH" FAST_DATA_DIR="$data" fast launch -n 2 --timeout 560 -- \
  python "$source/examples/python/train_fmnist.py" --summary "$tmp/s.json"
"$python" - "$tmp/s.json" "$expected" <<'PY' || fail "the summary of the installed package's run (above)"
import json, sys
s = json.load(open(sys.argv[1]))
print({k: s.get(k) for k in ("workers", "steps", "fast_version", "fast_commit", "final_accuracy")})
assert s["workers"] == 2, s["workers"]
assert s["fast_version"] == sys.argv[2], s["fast_version"]
assert s["final_accuracy"] >= 0.85, s["final_accuracy"]  # the example's accuracy (docs/python.md): 2 epochs
PY
echo "PASS: pip-installed into a venv; fast --version and fast.__version__ say $expected; 2 processes reached 0.85"
