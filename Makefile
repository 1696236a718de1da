# FAST — the two commands of the README do all set-up on a fresh Debian 12 machine:
#   make demo   installs missing Debian packages, configures, builds, trains the demo job
#   make test   same set-up, then runs the test suite without the tests labelled `long` (what CI runs)
# Other targets: build, check, test-all, bench, sanitize, sanitize-all, fuzz, clean. `make help` lists them.

SHELL := /bin/bash
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

# Debian packages needed to build, test and benchmark (pybind11-dev, python3-dev: the Python package;
# python3-torch, python3-numpy, python3-pytest: its tests, the model-file test and PyTorch DDP;
# python3-venv, python3-setuptools, python3-wheel: `pip install --no-build-isolation .` and its test;
# libipsec-mb-dev, on x86-64 only: the zmq runtime's AES-256-GCM at 2.3x libcrypto's speed, docs/launch.md).
DEB_PACKAGES := cmake ninja-build g++ pkg-config zlib1g-dev libxxhash-dev libtorch-dev libopenblas0-pthread \
  libfmt-dev nlohmann-json3-dev libtomlplusplus-dev libcli11-dev libeigen3-dev libgtest-dev libzip-dev libsimgrid-dev libzmq3-dev cppzmq-dev libssl-dev \
  $(if $(filter x86_64,$(shell uname -m)),libipsec-mb-dev) \
  libopenmpi-dev openmpi-bin dataset-fashion-mnist iproute2 libjs-chart.js chromium \
  pybind11-dev python3-dev python3-torch python3-numpy python3-pytest python3-venv python3-setuptools python3-wheel

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: help deps configure build check test test-all demo bench sanitize sanitize-all fuzz clean

help:
	@echo "make demo      set up, build, train cnn on Fashion-MNIST with 2 workers (examples/demo.toml)"
	@echo "make check     set up, build, run the unit tests: the in-process ones (1-2 minutes on 2 cores)"
	@echo "make test      set up, build, the unit tests, then every other test but the long ones (what CI runs; 15-25 minutes of tests on 2 cores)"
	@echo "make test-all  make test's tests and the long ones: more seeds, strategies, runtimes and parameters"
	@echo "make build     set up and build; the command lands in $(BUILD)/bin/fast"
	@echo "make bench     build and run the benchmarks against OpenMPI, libtorch and PyTorch DDP (not CI)"
	@echo "make sanitize  make test's suite (not the long tests) under AddressSanitizer+UBSan, then ThreadSanitizer"
	@echo "make sanitize-all  the same with the long tests (several hours on 2 cores)"
	@echo "make fuzz      build the fuzz harnesses with clang's libFuzzer (build-fuzz), run each FUZZ_SECONDS (10) over its corpus"
	@echo "make clean     remove build folders"

# Installs the packages that are missing, and only those (apt-get update only when needed).
define install_missing
	@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "== installing Debian packages:" $$missing; \
	  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEB_PACKAGES))

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) > /dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The test tiers (tests/CMakeLists.txt): `unit`, the in-process tests, run by `make check`; the
# end-to-end tests (no tier label); `long`, repetitions of their checks on more seeds, strategies,
# runtimes or parameters, which `make test` (what CI runs) leaves out.
# `make test` runs the unit tests first, so that a broken build fails within a couple of minutes.
# The end-to-end tests run E2E_JOBS slots at once, two per core by default: much of their time is
# spent waiting (for a peer's timeout, a process they stopped, a port), so that one core's worth of
# them would leave the cores idle (on 2 cores: about 10 min instead of 11). A test whose processes
# must answer within a short peer timeout takes 2 slots (tests/CMakeLists.txt, "PROCESSORS").
E2E_JOBS ?= $(shell echo $$((2 * $$(nproc))))
CTEST := ctest --test-dir $(BUILD) --output-on-failure --timeout 900

check: build
	@$(CTEST) -j $(JOBS) --label-regex "^unit$$"

test: build
	@$(CTEST) -j $(JOBS) --label-regex "^unit$$"
	@$(CTEST) -j $(E2E_JOBS) --label-exclude "^(unit|long)$$"

test-all: build
	@$(CTEST) -j $(JOBS) --label-regex "^unit$$"
	@$(CTEST) -j $(E2E_JOBS) --label-exclude "^unit$$"

demo: build
	@$(BUILD)/bin/fast train --config examples/demo.toml

bench: deps
	@$(MAKE) --no-print-directory build BUILD=build-bench CMAKE_FLAGS="-DFAST_BUILD_BENCH=ON -DFAST_BUILD_TESTS=OFF"
	@bench/run.sh build-bench

# The suite under the sanitizers: ASan+UBSan (build-asan), then TSan (build-tsan); a report fails its
# test. `sanitize` runs what `make test` runs; `sanitize-all` adds the long tests, as `test-all` does
# (on 2 cores about two hours against more than four). SANITIZE_CTEST: more ctest arguments.
SANITIZE_CTEST ?= --label-exclude "^long$$"
ASAN_ENV := ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
TSAN_ENV := TSAN_OPTIONS="suppressions=$(CURDIR)/.ci/tsan.supp halt_on_error=1 ignore_noninstrumented_modules=1"

sanitize: deps
	@$(MAKE) --no-print-directory build BUILD=build-asan CMAKE_FLAGS="-DFAST_SANITIZE=address -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)"
	@$(ASAN_ENV) ctest --test-dir build-asan --output-on-failure -j $(JOBS) --timeout 1800 $(SANITIZE_CTEST)
	@$(MAKE) --no-print-directory build BUILD=build-tsan CMAKE_FLAGS="-DFAST_SANITIZE=thread -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)"
	@$(TSAN_ENV) ctest --test-dir build-tsan --output-on-failure -j $(JOBS) --timeout 1800 $(SANITIZE_CTEST)

sanitize-all:
	@$(MAKE) --no-print-directory sanitize SANITIZE_CTEST=

# The fuzz harnesses (tests/fuzz; docs/errors.md, "Fuzzing"): built with clang-14's libFuzzer under
# ASan+UBSan in build-fuzz, then each run for FUZZ_SECONDS over a copy of its corpus (new inputs land
# in build-fuzz/fuzz-corpus/NAME, crashes in build-fuzz/fuzz-artifacts/NAME). Any crash, leak,
# sanitizer report, timeout (FUZZ_TIMEOUT seconds per input) or undocumented exception fails it.
# `make test` replays each corpus with the ordinary build (the ctests fuzz_NAME_corpus).
FUZZ_SECONDS ?= 10
FUZZ_TIMEOUT ?= 10
FUZZ_HARNESSES ?= npy npz idx wire cluster platform checkpoint manifest spec dataset config hello stream
FUZZ_CXX ?= clang++-14
FUZZ_CC ?= clang-14

fuzz: deps
	$(call install_missing,clang-14 libclang-rt-14-dev)
	@cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=$(FUZZ_CC) \
	  -DCMAKE_CXX_COMPILER=$(FUZZ_CXX) -DFAST_FUZZ=ON -DFAST_WITH_PYTHON=OFF -DFAST_WITH_MPI=OFF \
	  $(CMAKE_FLAGS) > /dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzz
	@for h in $(FUZZ_HARNESSES); do \
	  mkdir -p build-fuzz/fuzz-corpus/$$h build-fuzz/fuzz-artifacts/$$h && \
	  echo "== fuzz_$$h: $(FUZZ_SECONDS) s" && \
	  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  build-fuzz/bin/fuzz_$$h -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_TIMEOUT) -rss_limit_mb=4096 \
	    -print_final_stats=1 -artifact_prefix=build-fuzz/fuzz-artifacts/$$h/ \
	    build-fuzz/fuzz-corpus/$$h tests/fuzz/corpus/$$h 2>&1 | tail -n 12 ; \
	  test $${PIPESTATUS[0]} -eq 0 || { echo "fuzz_$$h failed: the input is in build-fuzz/fuzz-artifacts/$$h"; exit 1; }; \
	done

clean:
	rm -rf build build-bench build-asan build-tsan build-fuzz
