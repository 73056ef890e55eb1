#!/usr/bin/env bash
# Runs the end-to-end tests with Salvor's server, CLI and plugins built with
# Go's race detector, and fails if any of those processes reported a data
# race (each writes its reports to a file of its own; the tests would not
# see them). Usage: hack/race.sh [go test -run regexp]
set -euo pipefail
cd "$(dirname "$0")/.."
reports=$(mktemp -d)
trap 'rm -rf "$reports"' EXIT
make --no-print-directory testbed helm >/dev/null
# Under the race detector the suite runs two to three times slower than in
# make test; the reports are printed whether or not the tests passed.
status=0
GOFLAGS=-race GORACE="log_path=$reports/race" go test -count=1 -timeout 150m -run "${1:-.}" ./test/e2e || status=$?
if compgen -G "$reports/race.*" >/dev/null; then
	cat "$reports"/race.*
	echo "data races reported by $(ls "$reports" | wc -l) process(es)" >&2
	exit 1
fi
if [ "$status" -ne 0 ]; then
	exit "$status"
fi
echo "no data races reported"
