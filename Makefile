# FAST — the two commands of the README do all set-up on a fresh Debian 12 machine:
#   make demo   installs missing Debian packages, configures, builds, trains the demo job
#   make test   same set-up, then runs the test suite without the tests labelled `long` (what CI runs)
# Other targets: build, check, test-all, bench, sanitize, sanitize-all, clean. `make help` lists them.

SHELL := /bin/bash
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

# Debian packages needed to build, test and benchmark (pybind11-dev, python3-dev: the Python package;
# python3-torch, python3-numpy, python3-pytest: its tests, the model-file test and PyTorch DDP;
# python3-venv, python3-setuptools, python3-wheel: `pip install --no-build-isolation .` and its test).
DEB_PACKAGES := cmake ninja-build g++ pkg-config zlib1g-dev libxxhash-dev libtorch-dev libopenblas0-pthread \
  libfmt-dev nlohmann-json3-dev libtomlplusplus-dev libcli11-dev libeigen3-dev libgtest-dev libzip-dev libsimgrid-dev libzmq3-dev cppzmq-dev libssl-dev \
  libopenmpi-dev openmpi-bin dataset-fashion-mnist iproute2 libjs-chart.js chromium \
  pybind11-dev python3-dev python3-torch python3-numpy python3-pytest python3-venv python3-setuptools python3-wheel

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: help deps configure build check test test-all demo bench sanitize sanitize-all clean

help:
	@echo "make demo      set up, build, train cnn on Fashion-MNIST with 2 workers (examples/demo.toml)"
	@echo "make check     set up, build, run the unit tests: the in-process ones (about a minute on 2 cores)"
	@echo "make test      set up, build, the unit tests, then every other test but the long ones (what CI runs; about 7 minutes)"
	@echo "make test-all  make test's tests and the long ones: more seeds, strategies, runtimes and parameters"
	@echo "make build     set up and build; the command lands in $(BUILD)/bin/fast"
	@echo "make bench     build and run the benchmarks against OpenMPI, libtorch and PyTorch DDP (not CI)"
	@echo "make sanitize  make test's suite (not the long tests) under AddressSanitizer+UBSan, then ThreadSanitizer"
	@echo "make sanitize-all  the same with the long tests (several hours on 2 cores)"
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
# runtimes or parameters, which CI's budget (30 minutes on 2 cores, build included) leaves out.
# `make test` runs the unit tests first, so that a broken build fails within a couple of minutes.
CTEST := ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --timeout 900

check: build
	@$(CTEST) --label-regex "^unit$$"

test: build
	@$(CTEST) --label-regex "^unit$$"
	@$(CTEST) --label-exclude "^(unit|long)$$"

test-all: build
	@$(CTEST) --label-regex "^unit$$"
	@$(CTEST) --label-exclude "^unit$$"

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

clean:
	rm -rf build build-bench build-asan build-tsan
