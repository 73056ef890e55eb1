#!/usr/bin/env bash
# Runs every package's own tests (make test-unit) as go test would, with
# the flags below, but links each package's test binary with go test -c:
# go test links every binary again on each run (3-6 s of CPU each under
# the race detector, a third of the unit tests' CPU here), while -c keeps
# the linked binary in Go's build cache, so a run after a change relinks
# only the binaries of the packages it touched. The binaries run PARALLEL
# at once, each in its package's directory as go test runs them; a
# package's output is printed when it fails, as go test prints it.
#
# Usage: hack/unit.sh [packages]   (default: every package but test/e2e)
set -euo pipefail
cd "$(dirname "$0")/.."
PARALLEL=${PARALLEL:-4}
TIMEOUT=${TIMEOUT:-30m}
# -ldflags=-w: the binaries need no DWARF (stack traces and race reports
# come from the runtime's own tables); leaving it out makes linking a
# fifth cheaper.
BUILDFLAGS=(-race -vet=off -tags testing -ldflags=-w)
out=bin/unit
mkdir -p "$out"

# The packages with tests, as "import-path dir" lines; a go list that
# fails (a package that does not parse) stops the run rather than leave
# packages out of it.
listed=$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' "${@:-./...}")
mapfile -t pkgs < <(grep -v '/test/e2e ' <<<"$listed" | grep .)
if [ ${#pkgs[@]} -eq 0 ]; then
	echo "hack/unit.sh: no packages with tests in ${*:-./...}" >&2
	exit 1
fi

# go test -c -o DIR/ writes NAME.test for each package, so packages that
# share a last path element are built into groups of their own. A binary
# already there is relinked only when its build ID says it is out of date:
# the directory is kept between runs for that (make clean empties it),
# and only this run's packages' binaries in it are run.
declare -A group_of_name=() # name -> how many groups hold it
groups=()                   # group number -> import paths
runs=()                     # "binary dir import-path" lines
for line in "${pkgs[@]}"; do
	path=${line%% *} dir=${line#* }
	name=${path##*/}
	g=${group_of_name[$name]:-0}
	group_of_name[$name]=$((g + 1))
	groups[g]="${groups[g]:-} $path"
	runs+=("$PWD/$out/$g/$name.test $dir $path")
done
built=$EPOCHREALTIME
for g in "${!groups[@]}"; do
	# shellcheck disable=SC2086 # the group's import paths are words
	go test -c -o "$out/$g/" "${BUILDFLAGS[@]}" ${groups[g]}
done
awk -v n=${#runs[@]} -v a="$built" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d test binaries built or taken from the cache in %.1fs\n", n, b - a }'

# run_one runs one package's binary in its directory and prints go test's
# summary line for it (and its output when it failed).
run_one() {
	local bin=$1 dir=$2 path=$3 log start took rc=0
	log=$(mktemp)
	start=$EPOCHREALTIME
	(cd "$dir" && "$bin" -test.count=1 -test.timeout="$TIMEOUT" -test.paniconexit0 >"$log" 2>&1) || rc=$?
	took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3fs", b - a }')
	# One package's lines at a time: a failure's output is long.
	local status='ok  '
	[ "$rc" -eq 0 ] || status=FAIL
	{ [ "$rc" -eq 0 ] || cat "$log"; printf '%s\t%s\t%s\n' "$status" "$path" "$took"; } | flock "$LOCK" cat
	rm -f "$log"
	return "$rc"
}
failed=$(mktemp)
LOCK=$(mktemp)
trap 'rm -f "$failed" "$LOCK"' EXIT
export -f run_one
export TIMEOUT LOCK

printf '%s\n' "${runs[@]}" | xargs -P "$PARALLEL" -L 1 bash -c 'run_one "$@" || echo "$3" >>'"$failed" _ || true
if [ -s "$failed" ]; then
	echo "FAIL: $(wc -l <"$failed") package(s):" >&2
	sed 's/^/	/' "$failed" >&2
	exit 1
fi
