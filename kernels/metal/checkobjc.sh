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
# The Go half (metal_darwin.go, cgo) is not checked: cgo would need the
# macOS SDK's C headers to build runtime/cgo.
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

if [ "${1:-}" = --self-test ]; then
	t=$(mktemp -d)
	trap 'rm -rf "$t"' EXIT
	src=$dir/metal_darwin.m
	check "$src" 2>/dev/null || { echo "checkobjc: metal_darwin.m fails before any mutation" >&2; exit 1; }
	n=0
	for m in \
		's/uint64_t bytes, int \*buf\) \{/uint64_t bytes, int *id) {/; s/\*buf = /*id = /' \
		's/\[c->cmd commit\]/[c->cmd commitNow]/' \
		's/setBytes:push length:\(NSUInteger\)pushBytes/setBytes:push length:push/' \
		's/snprintf\(err, errlen, "no Metal device"\)/snprint(err, errlen, "no Metal device")/' \
		's/^void dfmtl_free\(dfmtl \*c, int buf\) \{/void dfmtl_free(dfmtl *c, long buf) {/' \
		's/c->queue = \[dev newCommandQueue\];/c->queue = [dev newCommandQueueWithMaxCount:4];/'; do
		n=$((n + 1))
		sed -E "$m" "$src" >"$t/m$n.m"
		if cmp -s "$src" "$t/m$n.m"; then
			echo "checkobjc: mutation $n ($m) changed nothing" >&2
			exit 1
		fi
		if check "$t/m$n.m" 2>"$t/why"; then
			echo "checkobjc: mutation $n ($m) passed the check" >&2
			exit 1
		fi
		echo "checkobjc: mutation $n rejected: $(grep -m1 'error' "$t/why" | sed "s|$t/||")"
	done
	echo "checkobjc: $n mutations of metal_darwin.m rejected"
	exit 0
fi

check "$dir/metal_darwin.m"
echo "checkobjc: metal_darwin.m type-checked with $cc (arm64-apple-macos13, macshim)"
