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

# Debian packages the tests use, as "command:package" pairs.
APT_DEPS := qemu-aarch64:qemu-user aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu node:nodejs npm:npm

# npm packages the tests use (the official openai client, run by
# server/node_test.go), installed from the committed package-lock.json.
NPM_DIRS := server/testdata/node

.PHONY: all build run test vet fmt-check darwin-vet unit kernels-arm64 deps bench app lint clean

all: build

build:
	$(GO) build -o $(BIN) .

run: build
	./$(BIN)

test: deps vet fmt-check darwin-vet unit kernels-arm64

# The NEON kernels, cross-compiled and run under qemu-user: the conformance
# tests in -short mode (the K3-sized matrices take minutes emulated; amd64
# runs them in `unit`).
KERNELS_ARM64_TESTS := RandomShapes|ExpertFFN|Activation|Decode|ByName|Threads|Allocate|BadShapes
kernels-arm64:
	CC=aarch64-linux-gnu-gcc CGO_ENABLED=1 GOARCH=arm64 $(GO) test -c -o bin/kernels-arm64.test ./kernels
	qemu-aarch64 -L /usr/aarch64-linux-gnu bin/kernels-arm64.test -test.short -test.count=1 -test.run '$(KERNELS_ARM64_TESTS)'

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

darwin-vet:
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet $(DARWIN_PKGS)

unit:
	$(GO) test -count=1 -timeout 30m ./...

deps:
	@missing=""; for pair in $(APT_DEPS); do cmd=$${pair%%:*}; pkg=$${pair#*:}; \
	  command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$pkg"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
	$(GO) mod download
	@for d in $(NPM_DIRS); do \
	  if [ ! -f $$d/node_modules/.package-lock.json ] || [ $$d/package-lock.json -nt $$d/node_modules/.package-lock.json ]; then \
	    echo "installing npm packages in $$d"; npm ci --prefix $$d --no-audit --no-fund --loglevel=error || exit 1; \
	  fi; done

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
	$(GO) run honnef.co/go/tools/cmd/staticcheck@2025.1.1 ./...

clean:
	rm -rf bin
