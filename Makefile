# A thin layer over CMake/CTest and pytest so the usual commands work:
#   make         build ./gcluster (installs the Debian packages it needs first)
#   make test    every test tier, in order (the `test:` target below; HACKING.md, "Test tiers"):
#                format (clang-format and scripts/check-layers), release build, unit, unit under
#                ASan/UBSan, valgrind, peer (normal and ASan/UBSan), install, cluster, fault (a
#                TCP fault proxy and API server restarts; see tests/cluster/fault)
#   make demo    the seed's flow end to end on the built-in local cluster
#   make bench   side-by-side benchmarks (see bench/README.md)
#   make bench-scale  how each command's cost grows with the cluster and the job (bench/README.md)
#   make scale-test   the scale tier: a 1,024-host job on ~2,000 nodes (tests/scale; not in test)
#   make install install the binary, man pages and shell completions (PREFIX, DESTDIR)
#   make package build the Debian package (build/package/gcluster_VERSION_ARCH.deb)
BUILD_DIR      ?= build
ASAN_BUILD_DIR ?= build-asan
RELEASE_BUILD_DIR ?= build-release
CMAKE_FLAGS    ?=
PYTEST_FLAGS   ?= --durations=15
PYTHON         ?= python3
# How many unit and peer test programs run at once. Each makes its own temporary directory and
# its own loopback servers on ports the kernel picks, so they are independent.
CTEST_JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX         ?= /usr/local
# -Werror (CMake's GCLUSTER_WERROR, off when cmake is run directly, so that packagers with a newer
# compiler are not failed by its new warnings): on for every build made through make, so CI and
# `make test` fail on a warning. `make WERROR=OFF` to build without it.
WERROR         ?= ON
CMAKE_CONFIGURE = -DGCLUSTER_WERROR=$(WERROR) $(CMAKE_FLAGS)

.PHONY: all deps background-builds background-builds-default gcluster asan-build release-build test-peers unit-test asan-test valgrind-test \
        peer-test format format-check check-layers testenv testenv-default cluster-test fault-test test demo bench clean \
        install package install-test bench-scale scale-test jax-venv

all: gcluster

deps:
	@scripts/install-deps

$(BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_CONFIGURE)

# A build directory configured before GCLUSTER_WERROR existed, or with another WERROR, is
# configured again, so `make` never builds without -Werror by accident.
werror-of = grep -q '^GCLUSTER_WERROR:BOOL=$(WERROR)$$' $(1)/CMakeCache.txt || \
	cmake -S . -B $(1) -G Ninja $(CMAKE_CONFIGURE) >/dev/null

gcluster: deps $(BUILD_DIR)/build.ninja
	@$(call werror-of,$(BUILD_DIR))
	cmake --build $(BUILD_DIR)
	@ln -sf $(BUILD_DIR)/gcluster gcluster

$(ASAN_BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(ASAN_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGCLUSTER_SANITIZE=ON $(CMAKE_CONFIGURE)

asan-build: $(ASAN_BUILD_DIR)/build.ninja
	@$(call werror-of,$(ASAN_BUILD_DIR))
	cmake --build $(ASAN_BUILD_DIR)

# The binary as a packager builds it (CMAKE_BUILD_TYPE=Release, -O3): GCC's flow analysis finds
# more to warn about there, and -Werror (WERROR, on by default) makes each warning a failed build.
release-build: deps
	cmake -S . -B $(RELEASE_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_CONFIGURE)
	cmake --build $(RELEASE_BUILD_DIR) --target gcluster
	@echo "release-build: $(RELEASE_BUILD_DIR)/gcluster built with CMAKE_BUILD_TYPE=Release, no warnings"

SANITIZER_ENV = ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1

# The unit tier (label unit: tests/unit/<room>/, tests/cli/, tests/hostile/): pure C against
# loopback servers written in C and Python, and the pytest files over Cluster Toolkit's
# blueprints and hostile ones (pytest and PyYAML from
# tests/requirements.txt); it needs no Go. (--no-tests=error: a tier whose label matches no test
# fails instead of passing empty.)
unit-test: gcluster
	@scripts/install-deps --with-python
	ctest --test-dir $(BUILD_DIR) --output-on-failure --no-tests=error -j $(CTEST_JOBS) -L unit

asan-test: asan-build
	@scripts/install-deps --with-python
	$(SANITIZER_ENV) ctest --test-dir $(ASAN_BUILD_DIR) --output-on-failure --no-tests=error \
	    -j $(CTEST_JOBS) -L unit

# Real servers the peer tier talks to on loopback, built once with Go and cached: OCI registries
# for the image builder, and the API server's port-forward tunnel in front of the kubelet's
# port-forward server for the tunnel client.
test-peers:
	tests/image/build-registry >/dev/null
	tests/kube/build-portforward-peer >/dev/null

# The peer tier (tests/peer/), in the normal and the ASan/UBSan build; the gcloud parser test
# only in the normal one (its minutes are gcloud's; the plans it feeds gcloud are built under
# ASan/UBSan by the unit tier's test_deploy_plan).
peer-test: gcluster asan-build test-peers
	ctest --test-dir $(BUILD_DIR) --output-on-failure --no-tests=error -j $(CTEST_JOBS) -L peer
	$(SANITIZER_ENV) ctest --test-dir $(ASAN_BUILD_DIR) --output-on-failure --no-tests=error \
	    -j $(CTEST_JOBS) -L peer -E test_deploy_gcloud

valgrind-test: gcluster
	scripts/valgrind-main-paths $(BUILD_DIR)/gcluster

format: deps
	clang-format -i $$(git ls-files --cached --others --exclude-standard '*.c' '*.h')

# The format tier: clang-format, then the rules of HACKING.md that a script can check (the
# include table, no printing outside src/cli/, where libcurl is called, folder prefixes, no
# circle of calls between files, no raw outside text in cli/). The call rules read the object
# files' symbols, so the binary is built first.
format-check: gcluster
	@files=$$(git ls-files '*.c' '*.h'); \
	clang-format --dry-run --Werror $$files && \
	echo "format-check: $$(echo $$files | wc -w) C files formatted as .clang-format says"
	@$(PYTHON) scripts/check-layers --build $(BUILD_DIR)

check-layers: gcluster
	@$(PYTHON) scripts/check-layers --build $(BUILD_DIR)

# The local control plane's binaries (built once, cached under ~/.cache/gcluster-testenv);
# testenv-default without the older JobSet and Kueue that only the compatibility matrix starts.
testenv:
	testenv/build

testenv-default:
	testenv/build --default-only

# The venv of the real-JAX-client test (jax, jaxlib, pathwaysutils from PyPI; built once, cached
# under ~/.cache/gcluster-testenv; tests/jax/build-venv).
jax-venv:
	tests/jax/build-venv >/dev/null

# Each tier starts its own control plane: KUBECONFIG_TESTENV (a running environment to reuse,
# tests/cluster/conftest.py) is unset, because the compatibility matrix starts a second one and
# the fault tier restarts its API server, and with it set those tests fail rather than skip.
# It needs the default binaries only: the compatibility matrix, which the tier runs last, starts
# its environment through testenv/build, which builds (or waits for) the older releases then.
cluster-test: gcluster testenv-default jax-venv
	@scripts/background-builds log
	@scripts/install-deps --with-python
	env -u KUBECONFIG_TESTENV $(PYTHON) -m pytest -ra $(PYTEST_FLAGS) tests/cluster \
	    --ignore=tests/cluster/fault

# Its own control plane (its API server is restarted); the table of tries and outcomes is
# printed at the end and written to build/fault-results.md.
fault-test: gcluster testenv-default
	@scripts/install-deps --with-python
	env -u KUBECONFIG_TESTENV $(PYTHON) -m pytest -ra $(PYTEST_FLAGS) tests/cluster/fault

# DESTDIR (from the command line or the environment) is honoured by cmake --install.
install: gcluster
	cmake --install $(BUILD_DIR) --prefix "$(PREFIX)"

package: gcluster
	cmake --build $(BUILD_DIR) --target package

# make install into a staging directory, the .deb's contents and Depends, and the .deb installed
# on this machine with dpkg (then removed); needs root or sudo.
install-test: gcluster
	scripts/test-install $(BUILD_DIR)

# The Go build of the control plane and the JAX venv start first, in the background at nice 19
# (scripts/background-builds), and use what the C tiers leave idle; the tiers that need them wait.
background-builds: deps
	@BUILD_DIR=$(BUILD_DIR) scripts/background-builds start

background-builds-default: deps
	@BUILD_DIR=$(BUILD_DIR) scripts/background-builds start --default-only

test: background-builds format-check release-build unit-test asan-test valgrind-test peer-test \
      install-test cluster-test fault-test

demo: background-builds-default gcluster testenv-default
	scripts/demo

bench: gcluster testenv
	bench/run

bench-scale: gcluster testenv
	bench/run --scale

# Its own ~2,000-node control plane (~2.5 min to start, ~2.1 GiB of RSS with the 1,025-pod job
# running: testenv/README.md, "At scale"); not part of `make test`.
scale-test: gcluster testenv
	@scripts/install-deps --with-python
	$(PYTHON) -m pytest -ra $(PYTEST_FLAGS) tests/scale

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR) $(RELEASE_BUILD_DIR) gcluster
