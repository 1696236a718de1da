#!/usr/bin/env bash
# The installed package, used as another project uses it (docs/install.md). Both modes first
#   install: `cmake --install BUILD --prefix TMP/prefix` of the current build; the command, a
#   library and the package files must be there, `fast --help` must run, and no installed CMake
#   file may name the source or build tree (the package is relocatable), nor `fast` and its helper
#   without debug information, and neither they nor the build tree's `fast` may search the current
#   directory for libraries (check_runpath). Then
#   consumer: a copy of examples/cpp-consumer in TMP is configured with -DCMAKE_PREFIX_PATH=TMP/prefix
#     (find_package(fast)), built and run: it trains its own model with 2 workers on the threads
#     runtime and must exit 0 (test accuracy above its bound, replicas identical) and list exactly
#     the runtimes of this build; then tests/install/no_torch, configured with the Torch package
#     hidden, must find the package, refuse COMPONENTS torch naming libtorch, and build and run a
#     Worker of the layers below fast::torch;
#   headers: every installed header compiles on its own (a copy of tests/install/headers), and
#     find_package(fast COMPONENTS <the built runtimes>) succeeds where an unknown component fails;
#   python: the Python package lies under the prefix where Debian's /usr/bin/python3 looks for
#     packages of that prefix (checked for /usr/local), imports from there, and trains a step.
# Every step runs under `timeout` in the background and is killed (with its process group) if this
# script is stopped; TMP is removed on exit. Nothing is written into the source tree; in the build
# tree only install_manifest.txt, which every `cmake --install` rewrites (the two tests may race on
# it; nothing reads it).
# Usage: install_test.sh MODE CMAKE SOURCE_DIR BUILD_DIR GENERATOR CXX_COMPILER LAUNCHER "RUNTIMES" "FLAGS"
#   MODE: consumer, headers or python; LAUNCHER: the compiler launcher of the build (ccache) or "";
#   RUNTIMES: e.g. "threads sim zmq mpi"; FLAGS: compile and link flags the build's libraries
#   require of their users (sanitizers) or "".
set -u
if [ $# -ne 9 ] || { [ "$1" != consumer ] && [ "$1" != headers ] && [ "$1" != python ]; }; then
  echo "usage: $0 consumer|headers|python CMAKE SOURCE_DIR BUILD_DIR GENERATOR CXX_COMPILER LAUNCHER RUNTIMES FLAGS" \
       "(got $# arguments, mode '${1:-}')" >&2
  exit 2
fi
mode="$1" cmake="$2" source="$3" build="$4" generator="$5" cxx="$6" launcher="$7" runtimes="$8" flags="$9"
TMP_PREFIX=fast-install-test
. "$(dirname "$0")/steps.sh"
prefix="$tmp/prefix"

configure_args=(-G "$generator" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix")
[ -n "$launcher" ] && configure_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher")
[ -n "$flags" ] && configure_args+=(-DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags")

# Install (both modes) and check what was installed.
check_install() {
  run_step install 300 "$cmake" --install "$build" --prefix "$prefix"
  for f in bin/fast include/fast/strategy/worker.hpp include/fast/adapters/torch/replica.hpp; do
    [ -f "$prefix/$f" ] || fail "install: $f missing under the prefix"
  done
  package=$(dirname "$(find "$prefix" -name fastConfig.cmake -print -quit)")
  [ -d "$package" ] || fail "install: no fastConfig.cmake under the prefix"
  for f in fastConfigVersion.cmake fastTargets.cmake pkg_config_isystem.cmake; do
    [ -f "$package/$f" ] || fail "install: $f missing beside fastConfig.cmake ($package)"
  done
  ls "$prefix"/lib*/libfast_core.a > /dev/null 2>&1 || fail "install: libfast_core.a missing under $prefix/lib*"
  run_step fast-help 60 "$prefix/bin/fast" --help
  grep -q "Subcommands:" "$tmp/fast-help.log" || fail "installed fast --help: no 'Subcommands:' in its output"
  # train runs the helper from the prefix's libexec: a missing data folder is its error (exit 3),
  # where a missing helper would be 127.
  [ -x "$prefix/libexec/fast/fast-train" ] || fail "install: libexec/fast/fast-train missing under the prefix"
  "$prefix/bin/fast" train --steps 1 --data-dir "$tmp/no-data" > "$tmp/fast-train.log" 2>&1
  rc=$?
  [ "$rc" -eq 3 ] && grep -q "Fashion-MNIST file missing" "$tmp/fast-train.log" ||
    fail "installed fast train: expected the helper's missing-data error (exit 3), got exit $rc: $(tail -n 3 "$tmp/fast-train.log")"
  if grep -rlF -e "$source" -e "$build" "$package"; then
    fail "the installed CMake files above name the source or build tree; they must use the prefix only"
  fi
  check_runpath "$prefix/bin/fast" "$prefix/libexec/fast/fast-train" "$build/bin/fast"
  # Nor do the programs, where they carry no debug information (whose file names are the tree's).
  for program in "$prefix/bin/fast" "$prefix/libexec/fast/fast-train"; do
    if ! readelf -S "$program" | grep -q "\.debug_info" && grep -qF "$source/" "$program"; then
      fail "$program names the source tree: $(strings "$program" | grep -F "$source/" | head -n 1)"
    fi
  done
}

# consumer: examples/cpp-consumer from a copy, configured against the prefix, built, run, checked.
check_consumer() {
  cp -r "$source/examples/cpp-consumer" "$tmp/consumer-src"
  run_step consumer-configure 300 "$cmake" -S "$tmp/consumer-src" -B "$tmp/consumer-build" -DCMAKE_BUILD_TYPE=Release \
    "${configure_args[@]}"
  run_step consumer-build 600 "$cmake" --build "$tmp/consumer-build"
  run_step consumer-run 120 "$tmp/consumer-build/cpp-consumer"
  cat "$tmp/consumer-run.log"
  grep -qx "runtimes: $runtimes" "$tmp/consumer-run.log" ||
    fail "consumer: expected the line 'runtimes: $runtimes' (this build's runtimes), got:" \
         "$(grep '^runtimes' "$tmp/consumer-run.log")"
  grep -Eq "^steps [0-9]+, replicas identical: yes, test accuracy 0\.[0-9]{4} \(bound 0\.[0-9]+\)$" \
    "$tmp/consumer-run.log" || fail "consumer: no result line 'steps N, replicas identical: yes, test accuracy A (bound B)'"
  # Without libtorch: the layers below fast::torch, and the component torch refused by name.
  cp -r "$source/tests/install/no_torch" "$tmp/no-torch-src"
  run_step no-torch-configure 300 "$cmake" -S "$tmp/no-torch-src" -B "$tmp/no-torch-build" -DCMAKE_BUILD_TYPE=Release \
    "${configure_args[@]}"
  run_step no-torch-build 600 "$cmake" --build "$tmp/no-torch-build"
  run_step no-torch-run 60 "$tmp/no-torch-build/no-torch"
  grep -qx "first parameter of each worker: 0.25 0.25" "$tmp/no-torch-run.log" ||
    fail "no-torch: expected 'first parameter of each worker: 0.25 0.25', got: $(cat "$tmp/no-torch-run.log")"
  echo "PASS: installed; the consumer found the package, built, trained and checked its result; without libtorch" \
       "the layers below fast::torch built and stepped, and the component torch was refused by name"
}

# headers: tests/install/headers from a copy: one translation unit per installed header, and the components.
check_headers() {
  cp -r "$source/tests/install/headers" "$tmp/headers-src"
  run_step headers-configure 300 "$cmake" -S "$tmp/headers-src" -B "$tmp/headers-build" "${configure_args[@]}" \
    -DFAST_EXPECTED_RUNTIMES="$runtimes"
  run_step headers-build 600 "$cmake" --build "$tmp/headers-build"
  grep -h "checking [0-9]* installed headers" "$tmp/headers-configure.log"
  echo "PASS: installed; every installed header compiles alone; components as built"
}

# python: the package's place under the prefix is one of Debian python3's site folders once the
# prefix is /usr/local (site.getsitepackages()); imported from there, it trains one step.
check_python() {
  local module pydir rel
  module=$(find "$prefix" -name "_fast*.so" -path "*/fast/*" -print -quit)
  [ -n "$module" ] || fail "python: no fast/_fast*.so under the prefix"
  pydir=$(dirname "$(dirname "$module")")
  rel=${pydir#"$prefix"/}
  for f in __init__.py torch.py; do
    [ -f "$pydir/fast/$f" ] || fail "python: fast/$f missing beside the module ($pydir/fast)"
  done
  /usr/bin/python3 -c "import site, sys; sys.exit('/usr/local/$rel' not in site.getsitepackages())" ||
    fail "python: '$rel' under /usr/local is not among Debian python3's site folders:" \
         "$(/usr/bin/python3 -c 'import site; print(site.getsitepackages())')"
  cat > "$tmp/step.py" <<'PY'
import os, sys
import numpy as np
import fast, fast.torch
assert fast.__file__.startswith(os.environ["PYTHONPATH"]), fast.__file__
ctx = fast.init()
p, g = np.ones(3, np.float32), np.full(3, 2.0, np.float32)
w = fast.Worker(ctx, p, g, optimizer="sgd", lr=0.25, schedule="constant")
w.step()
assert np.array_equal(p, np.full(3, 0.5, np.float32)), p
print("python: imported", fast.__file__, "and stepped")
PY
  run_step python-import 120 env PYTHONPATH="$pydir" /usr/bin/python3 "$tmp/step.py"
  cat "$tmp/python-import.log"
  echo "PASS: installed; the Python package is where Debian's python3 finds it and works from there"
}

check_install
"check_$mode"
