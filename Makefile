# Thin wrapper over CMake/CTest so the usual commands work: make, make test, make demo.
BUILD_DIR      ?= build
ASAN_BUILD_DIR ?= build-asan
CMAKE_FLAGS    ?=
PYTEST_FLAGS   ?=

.PHONY: all deps configure gcluster unit-test asan-test cluster-test test demo bench format format-check clean testenv

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

unit-test: gcluster
	ctest --test-dir $(BUILD_DIR) --output-on-failure -L unit

asan-test: $(ASAN_BUILD_DIR)/build.ninja
	cmake --build $(ASAN_BUILD_DIR)
	ASAN_OPTIONS=detect_leaks=1 ctest --test-dir $(ASAN_BUILD_DIR) --output-on-failure -L unit

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

test: unit-test asan-test format-check

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR) gcluster
