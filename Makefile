# Thin wrapper over CMake. `make run`: build and run the example on 4 local ranks plus a short
# bandwidth table. `make test`: build and run the whole test suite. Both install missing packages.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || sysctl -n hw.ncpu 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
# Extra ctest arguments for `make test` (make sanitize passes -LE default-only: tests/CMakeLists.txt).
TEST_FLAGS ?=

.PHONY: all deps configure build run test campaign sanitize tsan portable cross-macos install clean \
	format format-check

all: build

deps:
	@scripts/install-deps.sh --with-tests

configure: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/tether launch -n 4 -- $(BUILD)/examples/all_sum
	$(BUILD)/tether launch -n 4 -- $(BUILD)/tether bench -c all_reduce -b 1K -e 16M -f 16 -n 10

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --timeout 300 $(TEST_FLAGS)

# The randomised fault campaign (docs/campaign.md): CAMPAIGN_RUNS runs at N = 8 across the
# backends, then a summary; `make test` runs a minute of it (campaign.short).
CAMPAIGN_RUNS ?= 1000
campaign: build
	python3 tests/campaign/campaign.py --build $(BUILD) --runs $(CAMPAIGN_RUNS) --n 8

# ASan+UBSan over the tests of the code that handles memory: units, the in-process and launched
# collectives on every backend, the fault paths (TCP's kills and stops, all of rdma's), the verbs
# emulator, the fuzz corpora, the campaign's seeds. Left out, as the default build's suite runs them:
# the long tests labelled default-only (tests/CMakeLists.txt), and what adds little of the library's
# own memory handling beyond those while taking a third of the time: network namespaces, the MPI
# plugin's and Python package's suites, the config tool's fixtures and the launcher's scripts, the
# settings and docs checks, the minute of campaign, and the TCP backends' stall and deadlock cases
# (rdma's, the same core code, stay). Of rdma's cable failover, whose cases differ in timing more
# than in the memory they handle, one case per kind runs: cableback.2.uc, firstback.4.uc.ring,
# cable.2.uc and cable.4.rc, silent.2.uc and silent.4.uc.ring (the default build runs all).
SANITIZE_SKIP = ^(netns|mpi|python|config|launcher|select|env|mlx|bench|install|symbols|docs)\.|^campaign\.short|^fault\.(mesh|ring)\.(stall|deadlock)\.|^fault\.rdma\.(cableback\.(2\.rc|4\.)|firstback\.4\.rc|cable\.(2\.rc|4\.uc)|silent\.2\.rc)
sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DTETHER_SANITIZE=address" \
		TEST_FLAGS="-LE default-only -E '$(SANITIZE_SKIP)'"

tsan:
	$(MAKE) test BUILD=build-tsan CMAKE_FLAGS="-DTETHER_SANITIZE=thread"

# The portable build: Linux compiles and runs the code macOS runs (core/platform.h). Its suite is the
# whole suite less the tests of the Linux-only paths, which it names first, less docs.commands
# (the docs' shell blocks test the docs, not the platform code; the default build's suite runs them),
# less the long tests no platform code changes (label default-only, tests/CMakeLists.txt), less
# the torch binding's and MPI plugin's suites (their own builds; what they call is tested here), and
# less the fault cases whose subject is core's and rdma's logic, not the platform's: the stall and
# deadlock cases of the TCP backends (their kills, stops and mismatches stay) and rdma's faults
# (its collectives stay).
portable:
	$(MAKE) build BUILD=build-portable CMAKE_FLAGS="-DTETHER_PORTABLE=ON"
	@echo "portable build: the tests of the Linux-only paths are left out:"
	@ctest --test-dir build-portable -N -L linux-only | sed -n 's/^ *Test *#[0-9]*: /  /p'
	ctest --test-dir build-portable --output-on-failure -j $(JOBS) --timeout 300 -LE 'linux-only|docs|default-only' \
		-E '^(torch|mpi)\.|^fault\.rdma\.|^fault\.(mesh|ring)\.(stall|deadlock)\.'

# Cross-build everything for macOS (arm64 and x86_64) and check what comes out (Linux only).
cross-macos:
	scripts/cross-macos.sh

install: build
	cmake --install $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cpp')

# What CI's format phase runs: does every C and C++ source and header pass .clang-format? (--list: which not)
format-check:
	scripts/check-format.sh

clean:
	rm -rf build build-asan build-tsan build-portable build-nordma build-macos-*
