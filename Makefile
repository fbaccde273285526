# A thin layer over CMake/CTest and pytest so the usual commands work:
#   make         build ./gcluster (installs the Debian packages it needs first)
#   make test    every test tier: unit (also under ASan/UBSan and valgrind), format, cluster,
#                then the fault tier (a TCP fault proxy and API server restarts; see
#                tests/cluster/fault)
#   make demo    the seed's flow end to end on the built-in local cluster
#   make bench   side-by-side benchmarks (see bench/README.md)
BUILD_DIR      ?= build
ASAN_BUILD_DIR ?= build-asan
CMAKE_FLAGS    ?=
PYTEST_FLAGS   ?=
PYTHON         ?= python3

.PHONY: all deps gcluster test-registries unit-test asan-test valgrind-test format format-check \
        testenv cluster-test fault-test test demo bench clean

all: gcluster

deps:
	@scripts/install-deps

$(BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)

gcluster: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR)
	@ln -sf $(BUILD_DIR)/gcluster gcluster

$(ASAN_BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(ASAN_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGCLUSTER_SANITIZE=ON $(CMAKE_FLAGS)

# Real OCI registries on loopback for the image builder's tests (built once, cached).
test-registries:
	tests/image/build-registry >/dev/null

unit-test: gcluster test-registries
	ctest --test-dir $(BUILD_DIR) --output-on-failure -L unit

asan-test: $(ASAN_BUILD_DIR)/build.ninja test-registries
	cmake --build $(ASAN_BUILD_DIR)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    ctest --test-dir $(ASAN_BUILD_DIR) --output-on-failure -L unit

valgrind-test: gcluster
	scripts/valgrind-main-paths $(BUILD_DIR)/gcluster

format: deps
	clang-format -i $$(git ls-files --cached --others --exclude-standard '*.c' '*.h')

format-check: deps
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

# The local control plane's binaries (built once, cached under ~/.cache/gcluster-testenv).
testenv:
	testenv/build

cluster-test: gcluster testenv
	@scripts/install-deps --with-python
	$(PYTHON) -m pytest -ra $(PYTEST_FLAGS) tests/cluster --ignore=tests/cluster/fault

# Its own control plane (its API server is restarted); the table of tries and outcomes is
# printed at the end and written to build/fault-results.md.
fault-test: gcluster testenv
	@scripts/install-deps --with-python
	$(PYTHON) -m pytest -ra $(PYTEST_FLAGS) tests/cluster/fault

test: format-check unit-test asan-test valgrind-test cluster-test fault-test

demo: gcluster testenv
	scripts/demo

bench: gcluster testenv
	bench/run

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR) gcluster
