# mutants.sh: sourced by mslcheck.sh and kernels/metal/checkobjc.sh, whose
# self-tests show that their checks fail on broken input.
#
# mutants CHECK SRC SUFFIX MUTATION...: each MUTATION (a sed -E script) must
# change SRC and make CHECK (a shell function taking a file) fail; prints
# the first line of why each failed, and returns 1 at the first mutation
# that changes nothing or passes. The names are prefixed mu_ because POSIX
# sh functions share their variables with the checks they call.
mutants() {
	mu_check=$1 mu_src=$2 mu_suffix=$3
	shift 3
	mu_t=$(mktemp -d)
	mu_n=0
	for mu_m in "$@"; do
		mu_n=$((mu_n + 1))
		mu_f=$mu_t/m$mu_n$mu_suffix
		sed -E "$mu_m" "$mu_src" >"$mu_f"
		if cmp -s "$mu_src" "$mu_f"; then
			echo "mutation $mu_n ($mu_m) changed nothing in $mu_src" >&2
			rm -rf "$mu_t"
			return 1
		fi
		if "$mu_check" "$mu_f" 2>"$mu_t/why"; then
			echo "mutation $mu_n ($mu_m) of $mu_src passed the check" >&2
			rm -rf "$mu_t"
			return 1
		fi
		echo "$(basename "$mu_src"): mutation $mu_n rejected: $(grep -m1 -E 'error|cannot|undefined|could not|too many|not enough|over Metal|bound twice|attributes' "$mu_t/why" | sed "s|$mu_t/||")"
	done
	rm -rf "$mu_t"
	echo "$(basename "$mu_src"): $mu_n mutations rejected"
}
