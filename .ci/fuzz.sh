#!/usr/bin/env bash
# Runs every fuzz target for a bounded time each. Usage: fuzz.sh [duration]
#
# A finding (the fuzzer writes the failing input under testdata/fuzz) always fails the run. Go's
# fuzzing coordinator sometimes ends a loaded run with a bare "context deadline exceeded" and no
# input; that is the engine's timer, not our code, so such a run is retried once (and a second
# such timeout is reported as a warning).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-10s}"

fuzz_once() { # pkg target logfile
	go test -run='^$' -fuzz="^${2}\$" -fuzztime="$fuzztime" "$1" >"$3" 2>&1
}

for pkg in $(go list ./...); do
	dir="$(go list -f '{{.Dir}}' "$pkg")"
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "fuzz $pkg $target ($fuzztime)"
		log="$(mktemp)"
		for attempt in 1 2; do
			if fuzz_once "$pkg" "$target" "$log"; then
				tail -n 2 "$log"
				break
			fi
			cat "$log"
			if grep -q "Failing input written to" "$log" || ! grep -q "context deadline exceeded" "$log"; then
				rm -f "$log"
				echo "fuzz: $target found a failure (see above)"
				exit 1
			fi
			if [ "$attempt" = 2 ]; then
				echo "fuzz: warning: $target: the fuzzing engine timed out twice without a finding"
			fi
			echo "fuzz: $target: engine timeout without a finding; retrying once"
		done
		rm -f "$log"
	done
done
