# The README's commands. CMake does the building; this file does the set-up around it.
#   make run    install missing build dependencies, build, diagnose this machine
#   make test   install missing build and test dependencies, build, run every test
#   make demo   gpudoctor on a simulated, troubled 8-GPU server (make demo-hgx: an HGX one)
#   make install [PREFIX=/usr/local] [DESTDIR=...]
#   make deb    the Debian packages gpudoctor and gpudoctor-sim, in build-deb/ [DEB_OUT]
#   make bench  the performance figures, written to docs/performance.md
#   make asan   the whole suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   make fuzz   every libFuzzer harness (clang) for FUZZ_SECONDS each [60]; docs/reliability.md

BUILD ?= build
PREFIX ?= /usr/local
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
GPUDOCTOR = $(BUILD)/gpudoctor
SIM_LIB = $(BUILD)/sim/libnvidia-ml.so.1

.PHONY: all build run test demo demo-hgx install deb bench asan fuzz deps deps-test format clean

all: build

deps:
	@scripts/deps.sh build

deps-test:
	@scripts/deps.sh test

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

# gpudoctor's exit status is its verdict (0-3); only a usage error or a crash fails make.
run: build
	./$(GPUDOCTOR) check || [ $$? -le 3 ]

test: deps-test build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

# The troubled server: the simulator plays its eight GPUs, a fixture tree its host (/proc, /sys,
# logs); scripts/demo.sh says how (README.md shows its first lines, e2e/readme-demo compares them).
demo: build
	scripts/demo.sh $(BUILD) || [ $$? -le 3 ]

# The troubled HGX server: NVSwitches, Fabric Manager and InfiniBand between its GPUs.
demo-hgx: build
	scripts/demo.sh $(BUILD) --hgx || [ $$? -le 3 ]

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# debian/ built by dpkg-buildpackage from a copy of the tree in DEB_OUT (build-deb/, or a directory
# outside the tree), then lintian; docs/deploy.md. DEB_BUILD_OPTIONS=nocheck skips the unit tests.
DEB_OUT ?= build-deb
deb:
	@scripts/deps.sh deb
	scripts/build-deb.sh $(DEB_OUT)

bench: build
	bench/run.sh $(BUILD)

asan: deps-test
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DGPUDOCTOR_SANITIZE=ON -DGPUDOCTOR_WERROR=ON $(CMAKE_FLAGS)"

# The harnesses are built by clang in a tree of their own (instrumented copies of the sources);
# fuzz/run.sh prints a table and fails when a harness finds a crash, kept in build-fuzz/fuzz/crashes.
FUZZ_SECONDS ?= 60
fuzz:
	@scripts/deps.sh fuzz
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DGPUDOCTOR_FUZZ=ON -DBUILD_TESTING=OFF $(CMAKE_FLAGS)
	cmake --build build-fuzz -j$(JOBS) --target fuzzers
	fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

format:
	clang-format -i $$(git ls-files '*.c' '*.h' ':!tests/fixtures/**' ':!fuzz/corpus/**')

clean:
	rm -rf $(BUILD) build-asan build-fuzz build-deb
