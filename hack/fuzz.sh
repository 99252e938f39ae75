#!/usr/bin/env bash
# Runs every fuzz target of the module for a short time (what `make fuzz` and `make test` call).
#
# Targets are found by their declaration (`func FuzzX(f *testing.F)` in a _test.go file without a
# build tag), so a new target is fuzzed without being listed here. Each runs FUZZTIME (default 3s)
# on top of its seeds and its committed corpus (testdata/fuzz/FuzzX); a crasher fails the run and is
# written to that directory by go test, to be committed with the fix.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
FUZZTIME="${FUZZTIME:-3s}"
START=${SECONDS}
n=0
while IFS=: read -r file _ decl; do
	if head -1 "${file}" | grep -q '^//go:build'; then
		continue
	fi
	target="$(sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(.*/\1/' <<<"${decl}")"
	pkg="./$(dirname "${file}")"
	echo "fuzz: ${pkg} ${target} for ${FUZZTIME}" >&2
	go test -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZTIME}" "${pkg}" >&2
	n=$((n + 1))
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' internal cmd api test | sort)
echo "fuzz: ${n} targets passed in $((SECONDS - START)) s"
