#!/bin/sh
# gen.sh DIR: compile every kernels/shaders/*.comp to DIR/NAME.spv (glslang)
# and translate it to DIR/NAME.metal (SPIRV-Cross; SPIR-V binding n becomes
# Metal buffer n, push constants buffer 0).
# gen.sh --compare A B: fail unless A and B hold the same generated files.
set -eu
src=$(dirname "$0")
if [ "${1:-}" = --compare ]; then
	for c in "$src"/*.comp; do
		s=$(basename "$c" .comp)
		for e in spv metal; do
			cmp -s "$2/$s.$e" "$3/$s.$e" || { echo "$3/$s.$e is stale: run make shaders" >&2; exit 1; }
		done
	done
	exit 0
fi
out=$1
for c in "$src"/*.comp; do
	s=$(basename "$c" .comp)
	glslangValidator -V -o "$out/$s.spv" "$c" >/dev/null
	spirv-cross --msl --msl-decoration-binding --output "$out/$s.metal" "$out/$s.spv"
done
