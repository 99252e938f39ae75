#!/usr/bin/env bash
# Runs every fuzz target of the two modules (the product's and dev/) for a short time (what `make fuzz` and `make test` call).
#
# Targets are found by their declaration (`func FuzzX(f *testing.F)` in a _test.go file without a
# build tag), so a new target is fuzzed without being listed here. Each runs FUZZTIME (default
# 30000x: that many executions) on top of its seeds and its committed corpus (testdata/fuzz/FuzzX);
# a crasher fails the run and is written to that directory by go test, to be committed with the fix.
#
# The default is a count, not a duration: with a duration, Go 1.26's fuzz coordinator can report its
# own deadline as a failure when a worker is still busy as the time runs out (`--- FAIL: FuzzX ...
# context deadline exceeded`, no failing input written; golang/go#75804, fixed in Go 1.27). A count
# sets no deadline, so a loaded machine only makes the run slower. FUZZTIME=10s still works.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
FUZZTIME="${FUZZTIME:-30000x}"
START=${SECONDS}
n=0
while IFS=: read -r file _ decl; do
	if head -1 "${file}" | grep -q '^//go:build'; then
		continue
	fi
	target="$(sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(.*/\1/' <<<"${decl}")"
	# A package of the dev tooling's module (dev/) is fuzzed in that module.
	mod=. pkg="./$(dirname "${file}")"
	if [[ "${pkg}" == ./dev/* ]]; then
		mod=dev pkg="./${pkg#./dev/}"
	fi
	echo "fuzz: ${mod} ${pkg} ${target} for ${FUZZTIME}" >&2
	go -C "${mod}" test -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZTIME}" "${pkg}" >&2
	n=$((n + 1))
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' internal cmd api test dev | sort)
if ((n == 0)); then
	echo "fuzz: FAIL: no fuzz target found (func FuzzX(f *testing.F) in a _test.go file without a build tag)" >&2
	exit 1
fi
echo "fuzz: ${n} targets passed in $((SECONDS - START)) s"
