#!/bin/sh
# mslcheck.sh DIR: type-check every DIR/*.metal (the MSL SPIRV-Cross writes)
# as far as a machine without Apple's Metal compiler can.
# mslcheck.sh --self-test DIR: show that the check rejects broken MSL.
#
# Apple's metal compiler runs only on macOS (and Windows); no Mac here. So
# clang's C++ for OpenCL front end parses each file with mslshim/metal_stdlib,
# which maps Metal's address spaces onto OpenCL's (device → __global,
# threadgroup → __local, thread → __private, constant → __constant): clang
# then checks the C++ (names, overloads, templates, the helper structs), the
# types, const and the address spaces of every pointer and reference, as
# Metal's own clang-based front end does. Unsuffixed float literals are
# single precision (-cl-single-precision-constant): Metal has no double, and
# SPIRV-Cross writes its constants that way. Metal's vector constructors,
# float4(a, b, c, d) and vec<T, N>(x), are rewritten into OpenCL's vector
# literals first, the one textual change.
#
# Not checked here: Metal's attributes beyond their names ([[buffer(n)]] and
# the thread-position attributes are checked against the list below and each
# buffer index used once, not by a compiler), Metal's own limits (threadgroup
# memory, argument counts), code generation and the results. Those need a Mac:
# kernels/metal's conformance tests run the same MSL there.
set -eu
cc=${CLANG:-clang-14}
shim=$(cd "$(dirname "$0")" && pwd)/mslshim
command -v "$cc" >/dev/null || { echo "mslcheck: $cc not found (Debian's clang-14; make deps installs it)" >&2; exit 1; }

# The attributes the generated kernels may carry: Metal's kernel-argument
# attributes SPIRV-Cross emits for the GLSL built-ins the shaders use, plus
# C++'s.
known='buffer\([0-9]+\)|thread_position_in_grid|thread_position_in_threadgroup|threadgroup_position_in_grid|threadgroups_per_grid|threads_per_threadgroup|thread_index_in_threadgroup|maybe_unused|clang::optnone'

# check FILE: 0 when FILE passes, the reasons on stderr otherwise.
check() {
	f=$1
	bad=$(grep -o '\[\[[^]]*\]\]' "$f" | sed 's/^\[\[//; s/\]\]$//' | grep -Evx "$known" || true)
	if [ -n "$bad" ]; then
		echo "$f: attributes Metal's kernels do not take here: $bad" >&2
		return 1
	fi
	dup=$(grep -o '\[\[buffer([0-9]*)\]\]' "$f" | sort | uniq -d)
	if [ -n "$dup" ]; then
		echo "$f: buffer index bound twice: $dup" >&2
		return 1
	fi
	[ "$(grep -c '^kernel void main0(' "$f")" = 1 ] || { echo "$f: not one kernel main0" >&2; return 1; }
	tmp=$(mktemp --suffix .clcpp)
	sed -E 's/\b((u?int|float|half|bool|u?short|u?char)[234])\(/(\1)(/g; s/\b(vec<[^<>()]*>)\(/(\1)(/g' "$f" >"$tmp"
	rc=0
	out=$("$cc" -x clcpp -cl-std=clc++2021 -cl-single-precision-constant -Xclang -finclude-default-header \
		-fsyntax-only -Werror -Wno-unknown-attributes -I "$shim" "$tmp" 2>&1) || rc=1
	[ -z "$out" ] || printf '%s\n' "$out" | sed "s|$tmp|$f|g" >&2
	rm -f "$tmp"
	return $rc
}

if [ "${1:-}" = --self-test ]; then
	# Each mutation of attn.metal (it has every construct the others use:
	# threadgroup arrays passed to helpers, const device buffers, the
	# helper templates) must fail the check.
	src=$2/attn.metal
	t=$(mktemp -d)
	trap 'rm -rf "$t"' EXIT
	check "$src" 2>/dev/null || { echo "mslcheck: $src fails before any mutation" >&2; exit 1; }
	n=0
	for m in \
		's/threadgroup float4 \(&A\)\[1024\]\)/device float4 (\&A)[1024])/' \
		's/pre\[n\] = _184;/pre[n] = _184; v_190.q[0] = 1.0;/' \
		's/\[\[thread_position_in_threadgroup\]\]/[[thread_position_in_warp]]/' \
		's/\[\[buffer\(4\)\]\]/[[buffer(3)]]/' \
		's/fma\(/fmaa(/' \
		's/float4\(0\.0\)/float3(0.0)/'; do
		n=$((n + 1))
		sed -E "$m" "$src" >"$t/m$n.metal"
		if cmp -s "$src" "$t/m$n.metal"; then
			echo "mslcheck: mutation $n ($m) changed nothing in $src" >&2
			exit 1
		fi
		if check "$t/m$n.metal" 2>/dev/null; then
			echo "mslcheck: mutation $n ($m) passed the check" >&2
			exit 1
		fi
	done
	echo "mslcheck: $n mutations of attn.metal rejected"
	exit 0
fi

dir=$1
n=0
fail=0
for f in "$dir"/*.metal; do
	check "$f" || fail=1
	n=$((n + 1))
done
[ $fail = 0 ] || { echo "mslcheck: MSL in $dir does not type-check (above)" >&2; exit 1; }
echo "mslcheck: $n MSL files type-checked with $cc (C++ for OpenCL, mslshim)"
