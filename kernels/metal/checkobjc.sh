#!/bin/sh
# checkobjc.sh: type-check the Metal host glue (metal_darwin.m) on a machine
# without the macOS SDK. checkobjc.sh --self-test: show the check rejects
# broken glue.
#
# No Mac here, so metal_darwin.m was written and never compiled. clang
# parses Objective-C for an arm64 macOS target on any host; what is missing
# is Apple's headers. macshim/ declares what the file uses of Foundation,
# Metal and the C library, with the types Apple's documentation gives them,
# and nothing else: so the check finds what a Mac's compiler would say of
# our own code (syntax, names, C types, a parameter that hides a type, a
# definition that disagrees with metal_darwin.h, a message sent with the
# wrong arguments), and a message the shim does not declare fails too. It
# cannot find a declaration in the shim that Apple's headers do not have:
# the shim is our reading of Apple's documentation. Warnings are errors.
#
# The Go half (metal_darwin.go) too: go vet cannot take a darwin cgo package
# here, since building runtime/cgo for darwin needs the SDK's libc headers.
# So cgo itself translates the file with the same clang and shim (its
# calls into C get their types from metal_darwin.h), and go vet checks the
# translated package for darwin/arm64, with runtime/cgo's one type
# (Incomplete) left out. A call that does not match metal_darwin.h, or any
# Go error, fails.
set -eu
cc=${CLANG:-clang-14}
dir=$(cd "$(dirname "$0")" && pwd)
command -v "$cc" >/dev/null || { echo "checkobjc: $cc not found (Debian's clang-14; make deps installs it)" >&2; exit 1; }

# check FILE: type-check FILE (a copy of metal_darwin.m) beside
# metal_darwin.h.
check() {
	"$cc" -target arm64-apple-macos13 -x objective-c -fsyntax-only -ffreestanding -nostdlibinc \
		-fobjc-runtime=macosx-13 -Werror -Wall -Wextra -I "$dir/macshim" -I "$dir" "$1"
}

# checkgo FILE: cgo-translate FILE (a copy of metal_darwin.go) and vet it
# with the package's other darwin files, in a package of the module (the
# imports resolve there) that is removed afterwards.
checkgo() {
	pkg=$(mktemp -d "$dir/zzcgocheck.XXXXXX")
	obj=$(mktemp -d)
	rc=0
	cp "$1" "$obj/metal_darwin.go"
	if (cd "$dir" && GOOS=darwin GOARCH=arm64 CGO_ENABLED=1 \
		CC="$cc -target arm64-apple-macos13 -ffreestanding -nostdlibinc -I$dir/macshim" \
		go tool cgo -objdir "$obj" -importpath github.com/deltafin/deltafin/kernels/metal -- -I "$dir" "$obj/metal_darwin.go"); then
		for f in "$obj/_cgo_gotypes.go" "$obj/metal_darwin.cgo1.go" \
			$(cd "$dir" && GOOS=darwin GOARCH=arm64 CGO_ENABLED=1 go list -f '{{join .GoFiles " "}}' .); do
			case $f in /*) src=$f ;; *) src=$dir/$f ;; esac
			name=$(basename "$f" | sed 's/^_//')
			sed -e '/^import _cgopackage "runtime\/cgo"$/d' -e 's/_cgopackage\.Incomplete/struct{}/g' \
				-e '/^\/\/go:build /d' "$src" >"$pkg/$name"
		done
		(cd "$dir" && GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 go vet "./$(basename "$pkg")") || rc=1
	else
		rc=1
	fi
	rm -rf "$pkg" "$obj"
	return $rc
}

if [ "${1:-}" = --self-test ]; then
	. "$dir/../shaders/mutants.sh"
	check "$dir/metal_darwin.m" 2>/dev/null || { echo "checkobjc: metal_darwin.m fails before any mutation" >&2; exit 1; }
	mutants check "$dir/metal_darwin.m" .m \
		's/uint64_t bytes, int \*buf\) \{/uint64_t bytes, int *id) {/; s/\*buf = /*id = /' \
		's/\[c->cmd commit\]/[c->cmd commitNow]/' \
		's/setBytes:push length:\(NSUInteger\)pushBytes/setBytes:push length:push/' \
		's/snprintf\(err, errlen, "no Metal device"\)/snprint(err, errlen, "no Metal device")/' \
		's/^void dfmtl_free\(dfmtl \*c, int buf\) \{/void dfmtl_free(dfmtl *c, long buf) {/' \
		's/c->queue = \[dev newCommandQueue\];/c->queue = [dev newCommandQueueWithMaxCount:4];/'
	checkgo "$dir/metal_darwin.go" 2>/dev/null || { echo "checkobjc: metal_darwin.go fails before any mutation" >&2; exit 1; }
	mutants checkgo "$dir/metal_darwin.go" .go \
		's/C\.dfmtl_free\(d\.c, C\.int\(id\)\)/C.dfmtl_free(d.c, C.long(id))/' \
		's/C\.dfmtl_submit\(d\.c\)/C.dfmtl_submit(d.c, 0)/' \
		's/C\.dfmtl_begin\(/C.dfmtl_start(/'
	exit 0
fi

check "$dir/metal_darwin.m"
echo "checkobjc: metal_darwin.m type-checked with $cc (arm64-apple-macos13, macshim)"
checkgo "$dir/metal_darwin.go"
echo "checkobjc: metal_darwin.go translated by cgo with the same clang and vetted for darwin/arm64"
