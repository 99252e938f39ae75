#!/usr/bin/env bash
# Runs every phase of `make test` and prints each phase's time and the total (what `make test` and
# CI's .ci/run call).
#
# The tools phase runs first, then three stages, one after another:
#  1. the host phases (test-unit, fuzz, test-lvm, sanity, check-dist, test-rules, verify; verify
#     after check-dist and test-rules, as it regenerates dist/, the chart and the bundle in place,
#     which they read);
#  2. the storage conformance subset (docs/conformance.md) and the upgrade test (docs/upgrade.md),
#     each on a dev cluster of its own, side by side (they did so, passing, on 2026-11-28);
#  3. the e2e suite on a fresh dev cluster, alone.
# The e2e runs alone because its single-CPU UML nodes have no CPU to spare: at rest the product
# keeps them about 40-50 % busy, and its waits ran out in CI whenever the host phases ran beside it
# (144c409, b041dfc; at nice 19 too), and with 4-min waits even alone (docs/test-timing.md). A
# failing phase stops its lane; the other stages still run, so one run reports everything. Side-by-
# side lanes write to a log printed when they end; each phase's output is also kept for
# failure_digest. TEST_LANES=1 runs every phase one after another.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
MAKE="${MAKE:-make}"
HOST_PHASES=(test-unit fuzz test-lvm sanity check-dist test-rules verify)
WORK="$(mktemp -d)"
START=${SECONDS}
trap 'rm -rf "${WORK}"' EXIT
trap 'trap - INT TERM; kill 0; exit 130' INT TERM

# lane runs the phases given after its name one after another, stopping at the first failure, and
# appends "name seconds" (or "name seconds FAILED") per phase to ${WORK}/times; each phase's output
# is also kept in ${WORK}/<phase>.log for failure_digest.
lane() {
	local name="$1" phase t
	shift
	for phase in "$@"; do
		t=${SECONDS}
		if ! "${MAKE}" --no-print-directory "${phase}" 2>&1 | tee "${WORK}/${phase}.log"; then
			echo "${phase} $((SECONDS - t)) FAILED" >>"${WORK}/times"
			echo "make test: phase ${phase} FAILED; the ${name} lane stops here" >&2
			return 1
		fi
		echo "${phase} $((SECONDS - t))" >>"${WORK}/times"
	done
}

# failure_digest repeats, at the end, what each failed phase said about its failures (its FAIL,
# panic and timeout lines, then its last lines): a CI log is often read from its end, and the
# lanes' outputs are long and interleaved.
failure_digest() {
	local phase secs failed
	while read -r phase secs failed; do
		[[ -n "${failed}" && -f "${WORK}/${phase}.log" ]] || continue
		echo "make test: ---- what failed in ${phase} ----"
		grep -E -- '--- FAIL|^FAIL|panic:|timed out|[Tt]imeout|FAILED|GUEST-EXIT=[1-9]' "${WORK}/${phase}.log" |
			grep -v '^make test:' | head -n 40
		echo "make test: ---- the last lines of ${phase} ----"
		tail -n 25 "${WORK}/${phase}.log"
	done <"${WORK}/times"
}

# beside runs lane NAME PHASE... in the background with its output in ${WORK}/NAME.lane.log, while
# the calling shell runs the other lane; print_lane prints that log once the lane has ended.
beside() {
	local name="$1"
	shift
	lane "${name}" "$@" >"${WORK}/${name}.lane.log" 2>&1 &
}
print_lane() {
	echo "make test: ---- output of the ${1} lane ----"
	cat "${WORK}/${1}.lane.log"
	echo "make test: ---- end of the ${1} lane ----"
}

rc=0
if [[ "${TEST_LANES:-3}" == 1 ]]; then
	lane all tools "${HOST_PHASES[@]}" conformance-subset upgrade e2e || rc=1
else
	lane tools tools || rc=1
	if [[ ${rc} -eq 0 ]]; then
		echo "make test: stage 1 of 3: the host phases"
		lane host "${HOST_PHASES[@]}" || rc=1
		echo "make test: stage 2 of 3: the conformance subset beside the upgrade test; its output follows" \
			"the upgrade test's"
		beside conformance conformance-subset
		conformance_pid=$!
		lane upgrade upgrade || rc=1
		wait "${conformance_pid}" || rc=1
		print_lane conformance
		echo "make test: stage 3 of 3: the e2e suite, alone"
		lane e2e e2e || rc=1
	fi
fi
echo "make test: phase times"
while read -r phase secs failed; do
	printf '  %-11s %5d s%s\n' "${phase}" "${secs}" "${failed:+ ${failed}}"
done <"${WORK}/times"
if [[ ${rc} -ne 0 ]]; then
	failure_digest
	echo "make test: FAILED after $((SECONDS - START)) s"
	exit 1
fi
echo "make test: all passed in $((SECONDS - START)) s"
