#!/usr/bin/env bash
# Runs every fuzz target for a bounded time, one after the other (go test -fuzz takes one target
# per run). Usage: scripts/fuzz.sh [fuzztime]   e.g. scripts/fuzz.sh 20s   (make fuzz FUZZTIME=1m)
# The httpd target starts real Chromium in each fuzz worker, so it runs with a single worker; run
# this script through /work/notes/ctest on a shared machine. Exits non-zero if any target fails;
# a failing input is saved under testdata/fuzz/<target>/ of its package, as go test reports.
set -uo pipefail

fuzztime=${1:-20s}
GO=${GO:-go}
cd "$(dirname "$0")/.."

# package:target[:workers]; an empty worker count means go test's default (GOMAXPROCS).
targets=(
	".:FuzzParseOptionsQuery"
	".:FuzzParseOptionsJSON"
	".:FuzzCanonicalQuery"
	"./httpd:FuzzScreenshotRequest:1"
	"./egress:FuzzParseHostLiteral"
	"./egress:FuzzPolicy"
)

failed=()
for t in "${targets[@]}"; do
	IFS=: read -r pkg name workers <<<"$t"
	args=(-run "^${name}\$" -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s)
	if [ -n "$workers" ]; then
		args+=(-parallel "$workers")
	fi
	echo "=== fuzz $pkg $name for $fuzztime"
	if ! "$GO" test "$pkg" "${args[@]}"; then
		failed+=("$pkg $name")
	fi
done

if [ ${#failed[@]} -gt 0 ]; then
	printf 'fuzz: FAILED: %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran clean for $fuzztime each"
