#!/bin/sh
# device_bench.sh: run the Vulkan conformance tests and `deltafin bench
# kernels --json` on a machine with a GPU and its driver but no Go, possibly
# without the Vulkan loader, writing the results to $OUT.
#
# Built beforehand on the development machine (`make gpu-bundle`), and
# carried with the working tree:
#   bin/gpu/vulkan.test   go test -c -tags slow ./kernels/vulkan (dlopens libvulkan.so.1)
#   bin/gpu/deltafin      go build .
#                         (each stripped and gzipped, NAME.gz, to fit the
#                         device tool's 64 MiB; unpacked into $bin here)
#   .gl/*.deb             libvulkan1 (the loader), used only when the machine
#                         has none: unpacked into / and registered with ldconfig
#   bin/gpu/deltafin-base optional: the same command built from the commit
#                         before a change (`make gpu-bundle BASE=REV`), timed
#                         beside it in the same lease (a speed is claimed
#                         only against a limit or a base measured in one run)
#   bin/gpu/deltafin-base2 optional (BASE2=REV): a second base, whose prompts
#                         run beside the first's and whose
#                         kernels ONLY (below) times too
# Run from the repository root (the tests read testdata/):
#   OUT=/some/dir kernels/vulkan/device_bench.sh
# Outputs: env.txt (loader, ICD, GPU), conformance.txt (go test -v output),
# bench.json ("auto": on a machine with a GPU, kernels.Accelerate over the
# GPU and the CPU, with every GPU backend under "gpu"), bench.txt (the same
# as a table), bench_cpu.json (the CPU kernels alone); with a base binary,
# bench_base.json; slice_{auto,cpu}_N{,_base,_base2}.txt: `bench slice
# --moe-layers 1 --prefill N` for each N of $PREFILL (below), with WARM=1
# the same prompt a second time at the first length, its experts cached
# (--prefill-warm).
# PHASE=kernels stops after the CPU kernels' bench, PHASE=slice skips to the
# base binary (and runs the conformance tests first with CONFORMANCE=1) (the device tool runs 10 minutes a call; the machine stays warm
# between two calls made back to back). BASE_KERNELS=0 leaves out the base
# binary's kernels (when only the engine changed); PROFILE=1 adds a profiled
# auto prompt.
set -u
phase=${PHASE:-all}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:?set OUT to the results folder}
mkdir -p "$out"
cd "$root"
bin=$(mktemp -d)
for f in bin/gpu/*.gz; do
	[ -e "$f" ] && zcat "$f" >"$bin/$(basename "$f" .gz)" && chmod +x "$bin/$(basename "$f" .gz)"
done

{
	echo "== host"; uname -a; nproc
	command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
	if ! ldconfig -p | grep -q "libvulkan\.so\.1" || ! ldconfig -p | grep -q "libGLX\.so\.0"; then
		echo "== no Vulkan loader: unpacking .gl/*.deb"
		for f in .gl/*.deb; do [ -e "$f" ] && dpkg -x "$f" / && echo "unpacked $f"; done
		ldconfig
	fi
	ldconfig -p | grep libvulkan || echo "still no libvulkan.so.1: the tests will report ErrNoDevice"
	# The NVIDIA ICD manifest: where the container runtime mounts it, else
	# the usual places.
	if [ -z "${VK_DRIVER_FILES:-}" ] && [ -z "${VK_ICD_FILENAMES:-}" ]; then
		for j in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
			/etc/vulkan/icd.d/nvidia_icd.json; do
			# VK_ICD_FILENAMES for loaders older than 1.3.207.
			if [ -e "$j" ]; then export VK_DRIVER_FILES="$j" VK_ICD_FILENAMES="$j"; break; fi
		done
	fi
	echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-} VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-}"
	[ -n "${VK_DRIVER_FILES:-}" ] && cat "$VK_DRIVER_FILES"
} >"$out/env.txt" 2>&1 # a group, not a subshell: the exports stay
if [ "$phase" != slice ] || [ "${CONFORMANCE:-0}" = 1 ]; then
# Conformance (the package's tests, the engine's exactness on the tiny
# checkpoints included), run from the package folder as go test would;
# with PHASE=slice only when CONFORMANCE=1.
# (TestCallsPassSyncValidation needs Debian's validation layer, which the
# device machine lacks; it runs in make test.)
(cd kernels/vulkan && "$bin/vulkan.test" -test.v -test.count=1 -test.timeout 8m -test.skip TestCallsPassSyncValidation) >"$out/conformance.txt" 2>&1
echo "conformance exit $?" >>"$out/env.txt"
grep -m1 'device ' "$out/conformance.txt" >>"$out/env.txt"
tail -3 "$out/conformance.txt"
fi
# GOBENCH=REGEX: the package's Go benchmarks matching it, for
# vulkan.test and every other test binary carried as vulkan-NAME.test.gz
# (a variant's: gobench.txt, gobench-NAME.txt; BenchmarkResidentPieces
# reports where a product's pieces leave the device idle), GOBENCHTIME
# runs each (default 20x).
if [ -n "${GOBENCH:-}" ]; then
	for t in "$bin"/vulkan*.test; do
		name=$(basename "$t" .test | sed 's/^vulkan//')
		(cd kernels/vulkan && "$t" -test.run '^$' -test.bench "$GOBENCH" -test.benchtime "${GOBENCHTIME:-20x}" -test.v) >"$out/gobench$name.txt" 2>&1
		echo "gobench$name exit $?" >>"$out/env.txt"
		grep -E "^Benchmark" "$out/gobench$name.txt" | tail -4
	done
fi
if [ "$phase" != slice ]; then

# Speed: the default ("auto") backend with every GPU backend present beside
# it, as JSON and as a table, then the CPU kernels alone.
"$bin/deltafin" bench kernels --json >"$out/bench.json" 2>>"$out/env.txt"
echo "bench exit $?" >>"$out/env.txt"
# bench.txt: backend, kernel, threads, GB/s, GFLOP/s, ratio to the GPU's
# peak, the shaders' GFLOP/s and ratio by the GPU's clock, copies' share.
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); [print(g["backend"], k["name"], k["threads"], *[round(k.get(f,0),3) for f in ("gbps","gflops","gpu_flop_ratio","device_gflops","device_flop_ratio","device_copy_share")]) for g in [r]+r.get("gpu",[]) for k in g["kernels"]]' "$out/bench.json" >"$out/bench.txt" 2>&1 || true
DELTAFIN_KERNELS=cpu "$bin/deltafin" bench kernels --json >"$out/bench_cpu.json" 2>>"$out/env.txt"
echo "bench cpu exit $?" >>"$out/env.txt"
cat "$out/env.txt" | tail -5
fi
[ "$phase" = kernels ] && exit 0

# The K3 slice's prompt (`bench slice --moe-layers 1 --prefill N`, the
# decode runs left out) at each length of PREFILL ("4096" unless set, e.g.
# "1024 4096 16384") with auto and with the CPU alone; with a base binary,
# its kernels (unless BASE_KERNELS=0) and, at the first length, its prompt
# beside each, in the same lease.
# A second base (BASE2) runs its prompts beside the first's.
# ONLY=NAME first runs `bench kernels --only NAME` (kernels_only.json;
# with base binaries, kernels_only_base.json and kernels_only_base2.json).
if [ -n "${ONLY:-}" ]; then
	"$bin/deltafin" bench kernels --only "$ONLY" --json >"$out/kernels_only.json" 2>>"$out/env.txt"
	echo "bench only $ONLY exit $?" >>"$out/env.txt"
	for b in base base2; do
		[ -x "$bin/deltafin-$b" ] || continue
		"$bin/deltafin-$b" bench kernels --only "$ONLY" --json >"$out/kernels_only_$b.json" 2>>"$out/env.txt"
		echo "bench $b only $ONLY exit $?" >>"$out/env.txt"
	done
fi
lens=${PREFILL:-4096}
[ "$lens" = none ] && exit 0 # PREFILL=none: no prompts
first=${lens%% *}
if [ -x "$bin/deltafin-base" ] && [ "${BASE_KERNELS:-1}" = 1 ]; then
	"$bin/deltafin-base" bench kernels --json >"$out/bench_base.json" 2>>"$out/env.txt"
	echo "bench base exit $?" >>"$out/env.txt"
fi
slice() { # KERNELS SUFFIX TOKENS [FLAGS...]
	k=$1 b=$2 n=$3 exe=deltafin
	shift 3
	case $b in _base | _base2) exe=deltafin$(echo "$b" | tr _ -) ;; esac
	# WARM=1: the same prompt again, its experts cached (--prefill-warm;
	# this binary's, and the bases' with WARM_BASE=1: those built before
	# af1a6c0 lack the flag), at the first length.
	if [ "${WARM:-0}" = 1 ] && [ "$n" = "$first" ]; then
		case $b in _base | _base2) [ "${WARM_BASE:-0}" = 1 ] && set -- "$@" --prefill-warm ;; *) set -- "$@" --prefill-warm ;; esac
	fi
	DELTAFIN_KERNELS=$k "$bin/$exe" bench slice --moe-layers 1 --engine-plan natural \
		--engine=false --synthetic=false --prefill "$n" "$@" >"$out/slice_${k}_$n$b.txt" 2>&1
	echo "slice $k $n$b exit $?" >>"$out/env.txt"
	grep "^prefill of" "$out/slice_${k}_$n$b.txt" >>"$out/env.txt"
}
for n in $lens; do
	# SLICE_BACKENDS: the backends this binary's prompts run with.
	for k in ${SLICE_BACKENDS:-auto cpu}; do
		slice $k "" "$n"
		# BASE_SLICES: the backends the base binary's prompt runs with.
		case " ${BASE_SLICES:-auto cpu} " in *" $k "*) ;; *) continue ;; esac
		# BASE_LENS: the lengths the bases run at (the first unless set).
		case " ${BASE_LENS:-$first} " in *" $n "*) ;; *) continue ;; esac
		for b in base base2; do
			if [ -x "$bin/deltafin-$b" ]; then slice $k _$b "$n"; fi
		done
	done
done
# PROFILE=1: once more with auto at the first length (PROFILE_LEN), under the CPU
# profiler (prof-prefill.pprof).
if [ "${PROFILE:-0}" = 1 ]; then
	slice auto _prof "${PROFILE_LEN:-$first}" --cpuprofile "$out/prof"
fi
