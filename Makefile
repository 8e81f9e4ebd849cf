# Deltafin: `make run` starts the app, `make test` runs everything CI runs.
# Anything the tests need beyond Go modules is installed by `make deps`
# (a dependency of `test`) when it is missing, so a fresh machine needs nothing
# done by hand.

GO       ?= go
BIN      := bin/deltafin
GOFILES   = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')
# Packages that need cgo on darwin (the menu bar links Cocoa through systray)
# cannot be vetted with CGO_ENABLED=0; everything else must be.
DARWIN_CGO_ONLY :=
DARWIN_PKGS = $(filter-out $(DARWIN_CGO_ONLY),$(shell $(GO) list ./...))

# Debian packages as "check:package" pairs: a check that is a path must
# exist, any other is a command that must be on PATH.
# The build (Linux only; macOS needs the Xcode command-line tools): gcc for
# cgo and the Vulkan loader's headers (kernels/vulkan is cgo over them).
BUILD_APT := gcc:gcc /usr/include/vulkan/vulkan.h:libvulkan-dev
# The tests: qemu and the arm64 cross compiler for NEON, node and npm for the
# official clients, the shader tools (glslang, SPIRV-Cross, and clang-14, which
# type-checks the generated MSL and the Metal glue: kernels/shaders/mslcheck.sh,
# kernels/metal/checkobjc.sh), dbus-daemon (the app's tests start a
# private session bus for the tray and notifications), and Mesa's software
# Vulkan driver, lavapipe, which the GPU conformance tests run on, with
# Khronos' validation layer, whose synchronization checks one of them runs
# the calls under (kernels/vulkan/sync_test.go); and for
# the menu's screenshots (app/screenshot_linux_test.go, saved under
# bin/screenshots) Xvfb, a real StatusNotifierItem host (the watcher and
# gtk-sni-tray-standalone), xdotool to open the menu and ImageMagick's import;
# and headless Chromium, which the web page's tests (web/) drive.
TEST_APT := qemu-aarch64:qemu-user aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu node:nodejs npm:npm \
	glslangValidator:glslang-tools spirv-cross:spirv-cross clang-14:clang-14 dbus-daemon:dbus-daemon \
	/usr/share/vulkan/icd.d/lvp_icd.x86_64.json:mesa-vulkan-drivers \
	/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json:vulkan-validationlayers \
	Xvfb:xvfb xdotool:xdotool import:imagemagick status-notifier-watcher:haskell-status-notifier-item-utils \
	gtk-sni-tray-standalone:haskell-gtk-sni-tray-utils chromium:chromium

# apt-install installs the packages of the pairs in $(1) whose check fails.
define apt-install
	@missing=""; for pair in $(1); do c=$${pair%%:*}; pkg=$${pair#*:}; \
	  case $$c in /*) [ -e $$c ];; *) command -v $$c >/dev/null 2>&1;; esac || missing="$$missing $$pkg"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
endef

# npm packages the tests use (the official clients, the agents, the npm
# oracles), installed from each committed package-lock.json by npm ci; where
# npm ci refuses a lock that holds only this platform's optional binaries,
# as server/testdata/agents' does for opencode's per-platform packages,
# npm install --no-save installs the same pinned versions from it.
NPM_DIRS := server/testdata/node server/testdata/agents downloader/testdata/xetnode tokenizer/testdata/tiktokennode

.PHONY: all build build-deps run test vet fmt-check darwin-vet info-plist unit kernels-arm64 engine-arm64 deps bench app lint clean shaders shaders-check metal-check race gpu-bundle

all: build

build: build-deps
	$(GO) build -o $(BIN) .

# What the build needs beyond Go modules, on Linux; on macOS nothing is
# installed.
build-deps:
ifeq ($(shell uname -s),Linux)
	$(call apt-install,$(BUILD_APT))
endif

run: build
	./$(BIN)

test: deps shaders-check metal-check vet fmt-check darwin-vet info-plist unit race kernels-arm64 engine-arm64

# The NEON kernels, cross-compiled and run under qemu-user: the conformance
# tests in -short mode (the K3-sized matrices take minutes emulated; amd64
# runs them in `unit`).
KERNELS_ARM64_TESTS := Conformance|Decode|ByName|Threads|Allocate|BadShapes|PoolHelpers|MemoryRead|FMAPeak
kernels-arm64:
	CC=aarch64-linux-gnu-gcc CGO_ENABLED=1 GOARCH=arm64 $(GO) test -c -o bin/kernels-arm64.test ./kernels
	qemu-aarch64 -L /usr/aarch64-linux-gnu bin/kernels-arm64.test -test.short -test.count=1 -test.run '$(KERNELS_ARM64_TESTS)'

# The engine's exactness tests on the NEON kernels, under qemu-user: the
# reference fixtures and the batched-against-per-token check, NEON only
# (amd64 runs every other backend natively in `unit`), in -short mode (one
# full recompute per prompt instead of sixteen).
ENGINE_ARM64_TESTS := TestK3TinyReference|TestKimiLinearTinyReference|TestPrefillEqualsPerTokenPath
engine-arm64:
	CC=aarch64-linux-gnu-gcc CGO_ENABLED=1 GOARCH=arm64 $(GO) test -c -o bin/engine-arm64.test ./engine
	cd engine && DELTAFIN_TEST_KERNELS=neon qemu-aarch64 -L /usr/aarch64-linux-gnu ../bin/engine-arm64.test -test.short -test.count=1 -test.run '$(ENGINE_ARM64_TESTS)'

# The GPU kernels are GLSL compute shaders written once (kernels/shaders/*.comp),
# compiled to SPIR-V (Vulkan) and translated to MSL (Metal); the generated files
# are committed, and shaders-check fails when they are stale or when the MSL
# does not type-check under clang with a stand-in metal_stdlib (mslcheck.sh
# says what that checks and what only a Mac can).
shaders:
	kernels/shaders/gen.sh kernels/shaders

shaders-check:
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	kernels/shaders/gen.sh $$tmp && kernels/shaders/gen.sh --compare $$tmp kernels/shaders
	kernels/shaders/mslcheck.sh kernels/shaders
	kernels/shaders/mslcheck.sh --self-test kernels/shaders

# The Metal glue (kernels/metal: metal_darwin.m and its cgo half), never built
# here (no macOS SDK): type-checked by clang for arm64 macOS against the
# declarations of the Apple APIs it uses, and the cgo half translated and
# vetted for darwin (kernels/metal/checkobjc.sh says what that finds).
metal-check:
	kernels/metal/checkobjc.sh
	kernels/metal/checkobjc.sh --self-test

vet:
	$(GO) vet ./...
	$(GO) vet -tags slow ./...

fmt-check:
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

darwin-vet:
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet $(DARWIN_PKGS)

# Info.plist must be well formed and carry the keys macOS needs; checked on
# every platform, before a Mac ever sees it.
info-plist:
	$(GO) test -count=1 -run '^(TestInfoPlist|TestReadPlistRejects)$$' .

# The suite fits `go test`'s default 10-minute timeout; the slow tests
# (K3-size shapes, whole models on emulated GPUs) sit behind the `slow` build
# tag. The second run re-runs only the packages the tag changes: the others'
# results come from the test cache of the first.
unit:
	$(GO) test ./...
	$(GO) test -tags slow -timeout 30m ./...

# The race detector over the packages whose goroutines share state (the
# server's queue and streams, the downloader, the expert store and its
# drives, the GPU backend's copies), and the app's notifications, whose
# NewNotifier once wrote beeep's AppName while a notification still read it.
# Not the app's tray tests: fyne.io/systray v1.12.2 (the newest) races with
# itself there (refresh writes menuVersion under another lock than
# GetLayout's read). The engine (its heads over the cores, the spine's
# loader and ring, the expert store's prefetches, cancellation) without its
# long numerical tests, which run the same forward pass over many more
# tokens: under -race all of it took 18 min here (sampled decoding 17,
# the oracle drafter's 15), these 50 s.
ENGINE_RACE_SKIP = TestSampledDecoding|TestOracleDraftKeepsTheTokens|TestK3TinyReference|TestDrafterKeepsTheTokens|TestSpeculationKeepsTheTokens|TestPrefillEqualsPerTokenPath|TestKimiLinearTinyReference|TestDrawMatchesFullSort
race:
	$(GO) test -race -count=1 ./server/ ./downloader/ ./experts/ ./drives/ ./internal/directio/ ./store/ ./kernels/gpu/
	$(GO) test -race -count=1 -run '^TestLongAnswerNotification$$' ./app/
	$(GO) test -race -count=1 -skip '$(ENGINE_RACE_SKIP)' ./engine/

deps: build-deps
	$(call apt-install,$(TEST_APT))
	$(GO) mod download
	@for d in $(NPM_DIRS); do \
	  if [ ! -f $$d/node_modules/.package-lock.json ] || [ $$d/package-lock.json -nt $$d/node_modules/.package-lock.json ]; then \
	    echo "installing npm packages in $$d"; \
	    npm ci --prefix $$d --no-audit --no-fund --loglevel=error 2>/dev/null || \
	    npm install --prefix $$d --no-save --no-audit --no-fund --loglevel=error || exit 1; \
	  fi; done

# What kernels/vulkan/device_bench.sh needs on a GPU machine without Go: the
# Vulkan test binary, deltafin, and the Vulkan loader's .deb in .gl/ (carried;
# unpacked there only when the machine lacks the loader).
# gpu-bundle [BASE=REV] [BASE2=REV]: what kernels/vulkan/device_bench.sh
# carries to the device machine; with BASE, deltafin-base built from that
# commit too (BASE2: deltafin-base2, whose kernels are timed beside them).
gpu-bundle:
	mkdir -p bin/gpu .gl
	rm -f bin/gpu/*.gz
	$(GO) test -c -tags slow -ldflags="-s -w" -o bin/gpu/vulkan.test ./kernels/vulkan
	$(GO) build -ldflags="-s -w" -o bin/gpu/deltafin .
	for pair in base:$(BASE) base2:$(BASE2); do name=$${pair%%:*} rev=$${pair#*:}; [ -n "$$rev" ] || continue; \
		rm -rf bin/gpu/$$name && git worktree add --detach bin/gpu/$$name $$rev && \
		(cd bin/gpu/$$name && $(GO) build -ldflags="-s -w" -o ../deltafin-$$name .); git worktree remove --force bin/gpu/$$name; done
	gzip -f bin/gpu/vulkan.test bin/gpu/deltafin $$(ls bin/gpu/deltafin-base bin/gpu/deltafin-base2 2>/dev/null)
	# The NVIDIA ICD (libGLX_nvidia) needs the glvnd libraries beside the loader.
	cd .gl && apt-get download libvulkan1 libglvnd0 libglx0 libgl1 libegl1 libopengl0 libgles2

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./...

# The macOS bundle. Building Deltafin.app needs a Mac (Cocoa through cgo, codesign).
app:
ifeq ($(shell uname -s),Darwin)
	./packaging/make-app.sh
else
	@echo "make app builds Deltafin.app and needs macOS (Xcode command-line tools); this is $$(uname -s)." >&2; exit 1
endif

lint: vet fmt-check darwin-vet
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

clean:
	rm -rf bin
