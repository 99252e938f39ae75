#!/usr/bin/env bash
# Runs the tests that need real lvm2 and device-mapper (what `make test-lvm` calls):
#
#  1. every Go package under ./internal with test files constrained by `//go:build guest` is
#     compiled (CGO_ENABLED=0 go test -c -tags guest) and its test binary runs inside its own
#     User-mode Linux guest (dev/internal/uml), at most TEST_LVM_PARALLEL (2) guests at a time,
#     the packages that took longest in the last full run first (their seconds are kept in the cache);
#  2. the host-side tests that boot guests themselves (test files mentioning LVMS_UML_TESTS) run
#     with LVMS_UML_TESTS=1 (the dev cluster's own up/down is proved by make e2e, whose
#     hack/e2e.sh fails when anything of the cluster is left after lvms-dev down).
#
# Every guest gets the STANDARD DISK LAYOUT (guest tests rely on it; see uml.StandardDisks):
#   /dev/ubda ... /dev/ubdg  seven read-write 2 GiB sparse disks, LVMS_GUEST_DISKS (comma-separated)
#   /dev/ubdh                one read-only 1 GiB disk, LVMS_GUEST_RO_DISK
#   LVMS_GUEST=1, PATH with /usr/sbin and /sbin
# and runs `<pkg>.test -test.v -test.count=1 -test.run=^TestGuest` with the package source directory
# as working dir. Only the guest tests (all named TestGuest...) run there: the package's other tests
# are unit tests, which make test-unit runs on the host with -race; in a guest they only cost time
# and meet UML's rare faults (on 2026-11-27 the guest kernel of ./cmd/lvms spun at 95 % of a core
# for minutes during the unit test TestMetricsOptions, with every guest process stopped).
#
# Environment: TEST_LVM_SET=all (default), core (make test: without FULL_ONLY below) or full-only
# (make test-more: FULL_ONLY alone); TEST_LVM_RUN=<regex> is passed as -test.run instead (and -run
# for host tests);
# TEST_LVM_TIMEOUT (default 15m) bounds each guest; TEST_LVM_PARALLEL (default 2).
# TEST_LVM_SANITY=1 (what make test sets, without TEST_LVM_RUN) also runs make sanity's csi-sanity
# (hack/sanity.sh, one guest) as one more job of the pool, ordered by its seconds like a package:
# alone after test-lvm it left one of the two lanes idle for its 6-7 min.
# Exits non-zero if any package fails or any guest does not report an exit code.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
RUN_RE="${TEST_LVM_RUN:-}"
# FULL_ONLY are the guest tests make test leaves out (TEST_LVM_SET=core) to fit CI's 90 min on two
# cores, whose UML guests are CPU-bound (2026-11-30: 95 % of both cores, three quarters of it system
# time, during the pool); make test-more runs them (TEST_LVM_SET=full-only). Each proves more of
# something a core test already touches (docs/test-timing.md):
#   TestGuestArchiveStaysBounded (lvmd, 92 s): lvm2's archive stays within ArchiveKeep files after
#     2 x ArchiveKeep changes (the core set's lvmd tests run the archiving commands themselves);
#   TestGuestRAIDCapacity (lvmd, 101 s): a RAID class's capacity is exactly the largest LV lvm2
#     allocates (TestGuestRAID creates, reports and removes RAID volumes);
#   TestGuestChunkedZeroAndCopy (lvmd, 80 s): zeroing and restore copies in many small chunks
#     (TestGuestNoDataAcrossTenants and TestGuestRestoreThickSnapshot run them in the product's).
FULL_ONLY=(TestGuestArchiveStaysBounded TestGuestRAIDCapacity TestGuestChunkedZeroAndCopy)
SKIP_RE=""
case "${TEST_LVM_SET:-all}" in
all) ;;
core) SKIP_RE="^($(IFS='|' && echo "${FULL_ONLY[*]}"))\$" ;;
full-only) RUN_RE="^($(IFS='|' && echo "${FULL_ONLY[*]}"))\$" ;;
*)
	echo "test-lvm: TEST_LVM_SET=${TEST_LVM_SET}: want all, core or full-only" >&2
	exit 2
	;;
esac
TIMEOUT="${TEST_LVM_TIMEOUT:-15m}"
PARALLEL="${TEST_LVM_PARALLEL:-2}"

log() { echo "test-lvm: $*" >&2; }

bash hack/uml-deps.sh

WORK="$(mktemp -d /tmp/lvms-test-lvm.XXXXXX)"
trap 'rm -rf "${WORK}"' EXIT
mkdir -p "${WORK}/bin" "${WORK}/logs"

# Packages with guest tests: a //go:build line naming "guest" without "!".
mapfile -t GUEST_PKGS < <(grep -rlP --include='*_test.go' '^//go:build\b.*(?<!!)\bguest\b' internal cmd dev/internal dev/cmd |
	xargs -r -n1 dirname | sort -u)
# Packages whose host tests boot guests themselves.
mapfile -t HOST_PKGS < <(grep -rl --include='*_test.go' 'LVMS_UML_TESTS' internal dev/internal | xargs -r -n1 dirname | sort -u)
# The csi-sanity job (TEST_LVM_SANITY=1) is named SANITY_JOB among the packages.
SANITY_JOB=sanity
if [[ "${TEST_LVM_SANITY:-}" == 1 && -z "${RUN_RE}" ]]; then
	GUEST_PKGS+=("${SANITY_JOB}")
fi

# go_in runs `go ARGS... ./DIR` in the module DIR belongs to: the product's, or the dev tooling's
# (dev/) for a directory under dev/.
go_in() { # dir go-args...
	local dir="$1"
	shift
	if [[ "${dir}" == dev/* ]]; then
		go -C dev "$@" "./${dir#dev/}"
	else
		go "$@" "./${dir}"
	fi
}

# Longest first: the guests run PARALLEL at a time, and a long package started last is the run's
# tail. The seconds each package's guest took in the last full run are kept in the cache; a
# package without a record (a new one, or a cold cache) counts as the longest.
SECONDS_FILE="${XDG_CACHE_HOME:-${HOME}/.cache}/lvms/test-lvm-seconds"
if [[ -s "${SECONDS_FILE}" ]]; then
	mapfile -t GUEST_PKGS < <(for dir in "${GUEST_PKGS[@]}"; do
		echo "$(awk -v d="${dir}" '$1 == d {print $2; found=1} END {if (!found) print 99999}' "${SECONDS_FILE}") ${dir}"
	done | sort -k1,1nr -k2 | cut -d' ' -f2)
fi

if [[ -n "${SKIP_RE}" ]]; then
	log "TEST_LVM_SET=core leaves out ${FULL_ONLY[*]} (make test-more runs them)"
fi
log "building umlrun"
go -C dev build -o "${WORK}/umlrun" ./cmd/umlrun

declare -A RESULT TIMING
failed=0

build_pkg() { # dir name
	log "compiling guest tests of ./$1"
	CGO_ENABLED=0 go_in "$1" test -c -tags guest -o "${WORK}/bin/$2.test"
}

run_pkg() { # dir name
	local args=(-test.v -test.count=1 "-test.run=${RUN_RE:-^TestGuest}") start=${SECONDS} rc=0
	[[ -z "${SKIP_RE}" ]] || args+=("-test.skip=${SKIP_RE}")
	if [[ "$1" == "${SANITY_JOB}" ]]; then
		bash hack/sanity.sh >"${WORK}/logs/$2.log" 2>&1 || rc=$?
		echo "$1 $((SECONDS - start))" >"${WORK}/logs/$2.seconds"
		return "${rc}"
	fi
	"${WORK}/umlrun" -standard-layout -timeout "${TIMEOUT}" -dir "${ROOT}/$1" \
		-- "${WORK}/bin/$2.test" "${args[@]}" >"${WORK}/logs/$2.log" 2>&1 || rc=$?
	echo "$1 $((SECONDS - start))" >"${WORK}/logs/$2.seconds"
	return "${rc}"
}

# report prints a finished package's log and records its result.
report() { # dir name rc
	local dir=$1 name=$2 rc=$3 status timing pass fail
	echo "===== guest package ./${dir}"
	cat "${WORK}/logs/${name}.log"
	timing="$(sed -n 's/^umlrun: guest timings: //p' "${WORK}/logs/${name}.log" | tail -1)"
	case "${rc}" in
	0) status=PASS ;;
	125) status="FAIL (guest did not report an exit code)" ;;
	*) status="FAIL (exit ${rc})" ;;
	esac
	[[ "${rc}" == 0 ]] || failed=1
	pass="$(grep -c '^--- PASS' "${WORK}/logs/${name}.log" || true)"
	fail="$(grep -c '^--- FAIL' "${WORK}/logs/${name}.log" || true)"
	status="${status}, tests: ${pass} passed, ${fail} failed"
	RESULT[${dir}]="${status}"
	TIMING[${dir}]="${timing:-no timings}"
	echo "===== ${status}: ./${dir} [guest ${TIMING[${dir}]}]"
}

# Compile PARALLEL at a time (linking a test binary is mostly one thread). xargs, not jobs of this
# shell: the guests below are its jobs, collected with wait -n.
declare -A NAME_OF DIR_OF
for dir in "${GUEST_PKGS[@]}"; do
	NAME_OF[${dir}]="${dir//\//_}"
done
export -f log build_pkg go_in
export WORK
for dir in "${GUEST_PKGS[@]}"; do
	[[ "${dir}" == "${SANITY_JOB}" ]] || echo "${dir} ${NAME_OF[${dir}]}"
done | xargs -r -P "${PARALLEL}" -n 2 bash -c 'build_pkg "$1" "$2" || touch "${WORK}/bin/$2.failed"' _
for dir in "${GUEST_PKGS[@]}"; do
	if [[ -e "${WORK}/bin/${NAME_OF[${dir}]}.failed" ]]; then
		RESULT[${dir}]="FAIL (does not compile)"
		failed=1
	fi
done

# Boot one guest per compiled package, PARALLEL at a time.
running=0
for dir in "${GUEST_PKGS[@]}"; do
	[[ -n "${RESULT[${dir}]:-}" ]] && continue
	if ((running >= PARALLEL)); then
		wait -n -p done_pid && rc=0 || rc=$?
		report "${DIR_OF[${done_pid}]}" "${NAME_OF[${DIR_OF[${done_pid}]}]}" "${rc}"
		running=$((running - 1))
	fi
	log "booting a guest for ./${dir}"
	run_pkg "${dir}" "${NAME_OF[${dir}]}" &
	DIR_OF[$!]="${dir}"
	running=$((running + 1))
done
while ((running > 0)); do
	wait -n -p done_pid && rc=0 || rc=$?
	report "${DIR_OF[${done_pid}]}" "${NAME_OF[${DIR_OF[${done_pid}]}]}" "${rc}"
	running=$((running - 1))
done

# The order of the next run (above): only a run of every test says how long a package takes.
if [[ -z "${RUN_RE}" ]] && ((failed == 0)); then
	mkdir -p "$(dirname "${SECONDS_FILE}")"
	cat "${WORK}"/logs/*.seconds >"${SECONDS_FILE}.tmp" && mv "${SECONDS_FILE}.tmp" "${SECONDS_FILE}"
fi

# Host-side tests that boot guests.
declare -A HOST_RESULT
for dir in "${HOST_PKGS[@]}"; do
	echo "===== host UML tests ./${dir}"
	args=(-count=1 -v)
	[[ -n "${RUN_RE}" ]] && args+=("-run=${RUN_RE}")
	if LVMS_UML_TESTS=1 go_in "${dir}" test "${args[@]}"; then
		HOST_RESULT[${dir}]=PASS
	else
		HOST_RESULT[${dir}]=FAIL
		failed=1
	fi
	echo "===== ${HOST_RESULT[${dir}]}: host UML tests ./${dir}"
done

echo
echo "test-lvm summary:"
for dir in "${GUEST_PKGS[@]}"; do
	echo "  guest ./${dir}: ${RESULT[${dir}]} [${TIMING[${dir}]:-not run}]"
done
for dir in "${HOST_PKGS[@]}"; do
	echo "  host  ./${dir}: ${HOST_RESULT[${dir}]}"
done
if ((${#GUEST_PKGS[@]} == 0)); then
	echo "  no packages with //go:build guest tests found"
	failed=1
fi
if ((failed)); then
	echo "test-lvm: FAIL"
	exit 1
fi
echo "test-lvm: PASS"
