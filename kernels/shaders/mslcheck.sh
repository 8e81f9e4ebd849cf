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
# Checked beside the parse, by reading the file: the kernel's attributes
# against the list below, each buffer index used once, and Apple's limits on
# a threadgroup (32 KiB of threadgroup memory, 1,024 threads).
# Not checked here: Metal's own compiler (its diagnostics beyond clang's, its
# other limits), the code it generates and the results. Those need a Mac:
# kernels/metal's conformance tests run the same MSL there.
set -eu
cc=${CLANG:-clang-14}
shim=$(cd "$(dirname "$0")" && pwd)/mslshim
command -v "$cc" >/dev/null || { echo "mslcheck: $cc not found (Debian's clang-14; make deps installs it)" >&2; exit 1; }

# The attributes the generated kernels may carry: Metal's kernel-argument
# attributes SPIRV-Cross emits for the GLSL built-ins the shaders use, plus
# C++'s.
known='buffer\([0-9]+\)|thread_position_in_grid|thread_position_in_threadgroup|threadgroup_position_in_grid|threadgroups_per_grid|threads_per_threadgroup|thread_index_in_threadgroup|maybe_unused|clang::optnone'

# threadgroupBytes FILE: the bytes of the threadgroup arrays FILE's kernel
# declares (scalars and vectors of 32-bit types, as the shaders use);
# fails on a declaration it cannot size.
threadgroupBytes() {
	awk '
	/^kernel void main0\(/ { in_main = 1 }
	in_main && /^    threadgroup / {
		line = $0
		sub(/^    threadgroup /, "", line)
		type = line; sub(/ .*/, "", type)
		width = type; sub(/^(float|uint|int)/, "", width)
		if (type !~ /^(float|uint|int)[234]?$/ || line !~ /^[a-z0-9]+ [A-Za-z_0-9]+(\[[0-9]+\])+;$/) {
			print FILENAME ": threadgroup declaration not sized here: " $0 > "/dev/stderr"
			bad = 1
			next
		}
		n = 4 * (width == "" ? 1 : width)
		rest = line
		while (match(rest, /\[[0-9]+\]/)) {
			n *= substr(rest, RSTART + 1, RLENGTH - 2) + 0
			rest = substr(rest, RSTART + RLENGTH)
		}
		total += n
	}
	END { if (bad) exit 1; print total + 0 }' "$1"
}

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
	# Apple's limits on a threadgroup (Apple7 and later, every Mac with
	# Apple silicon): 32 KiB of threadgroup memory, 1,024 threads.
	tg=$(threadgroupBytes "$f") || return 1
	if [ "$tg" -gt 32768 ]; then
		echo "$f: $tg bytes of threadgroup memory, over Metal's 32 KiB" >&2
		return 1
	fi
	wg=$(sed -nE 's/.*gl_WorkGroupSize .*= uint3\(([0-9]+)u, ([0-9]+)u, ([0-9]+)u\);.*/\1 \2 \3/p' "$f")
	[ -n "$wg" ] || { echo "$f: no gl_WorkGroupSize" >&2; return 1; }
	set -- $wg
	if [ $(($1 * $2 * $3)) -gt 1024 ]; then
		echo "$f: $(($1 * $2 * $3)) threads a threadgroup, over Metal's 1,024" >&2
		return 1
	fi
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
	# helper templates; and it takes all of Metal's 32 KiB) must fail the
	# check.
	. "$(dirname "$0")/mutants.sh"
	src=$2/attn.metal
	check "$src" 2>/dev/null || { echo "mslcheck: $src fails before any mutation" >&2; exit 1; }
	mutants check "$src" .metal \
		's/threadgroup float4 \(&A\)\[1024\]\)/device float4 (\&A)[1024])/' \
		's/pre\[n\] = _184;/pre[n] = _184; v_190.q[0] = 1.0;/' \
		's/\[\[thread_position_in_threadgroup\]\]/[[thread_position_in_warp]]/' \
		's/\[\[buffer\(4\)\]\]/[[buffer(3)]]/' \
		's/fma\(/fmaa(/' \
		's/float4\(0\.0\)/float3(0.0)/' \
		's/threadgroup float4 P\[1024\];/threadgroup float4 P[1025];/' \
		's/gl_WorkGroupSize \[\[maybe_unused\]\] = uint3\(256u/gl_WorkGroupSize [[maybe_unused]] = uint3(2048u/'
	exit 0
fi

dir=$1
n=0
fail=0
for f in "$dir"/*.metal; do
	check "$f" || fail=1
	n=$((n + 1))
done
[ $fail = 0 ] || { echo "mslcheck: MSL in $dir fails the check (above)" >&2; exit 1; }
echo "mslcheck: $n MSL files type-checked with $cc (C++ for OpenCL, mslshim)"
