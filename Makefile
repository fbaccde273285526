# A thin layer over CMake/CTest and pytest so the usual commands work:
#   make         build ./gcluster (installs the Debian packages it needs first)
#   make test    every test tier: unit (also under ASan/UBSan and valgrind), format, cluster
#   make demo    the seed's flow end to end on the built-in local cluster
#   make bench   side-by-side benchmarks (see bench/README.md)
#   make install install the binary, man pages and shell completions (PREFIX, DESTDIR)
#   make package build the Debian package (build/package/gcluster_VERSION_ARCH.deb)
BUILD_DIR      ?= build
ASAN_BUILD_DIR ?= build-asan
CMAKE_FLAGS    ?=
PYTEST_FLAGS   ?=
PYTHON         ?= python3
PREFIX         ?= /usr/local

.PHONY: all deps gcluster test-registries unit-test asan-test valgrind-test format format-check \
        testenv cluster-test test demo bench clean install package install-test

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
	$(PYTHON) -m pytest -ra $(PYTEST_FLAGS) tests/cluster

# DESTDIR (from the command line or the environment) is honoured by cmake --install.
install: gcluster
	cmake --install $(BUILD_DIR) --prefix "$(PREFIX)"

package: gcluster
	cmake --build $(BUILD_DIR) --target package

# make install into a staging directory, the .deb's contents and Depends, and the .deb installed
# on this machine with dpkg (then removed); needs root or sudo.
install-test: gcluster
	scripts/test-install $(BUILD_DIR)

test: format-check unit-test asan-test valgrind-test install-test cluster-test

demo: gcluster testenv
	scripts/demo

bench: gcluster testenv
	bench/run

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR) gcluster
