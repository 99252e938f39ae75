#!/usr/bin/env bash
# Runs the thin-metadata benchmark (what `make bench-thinmeta` calls, and the last part of
# `make bench`): TestGuestBenchmark of internal/thinmeta (internal/thinmeta/guest_bench_test.go,
# `//go:build guest`) measures Delta (1 % of the chunks changed between two snapshots) and
# Allocated (a fully written snapshot) of a thin volume: wall time, the tool's peak RSS (GNU time)
# and the Go side's allocations. It is compiled once (CGO_ENABLED=0 go test -c -tags guest) and
# runs twice, each time in its own User-mode Linux guest with the standard disk layout
# (dev/internal/uml, seven 2 GiB disks): first with a 64 KiB pool chunk size (the worst case,
# the most mappings), then with 1 MiB. The figures the test logs (its `MEASUREMENT` lines) are
# printed per chunk size; docs/changed-blocks.md "Measured cost" records them.
#
# Environment: THINMETA_BENCH_GIB (default 10) is the volume size in GiB (at most 12 on the
# standard disks); THINMETA_BENCH_CHUNK_KIB (default "64 1024") the pool chunk sizes in KiB,
# space-separated, one guest each, in order (the test itself reads one); THINMETA_BENCH_TIMEOUT
# (default 40m) bounds each guest (generous: a 2 GiB guest took ~15 s on a quiet host, but UML
# slows down a lot when the host is loaded).
# Exits non-zero if a guest test fails, is skipped, or a guest does not report an exit code.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
GIB="${THINMETA_BENCH_GIB:-10}"
CHUNKS="${THINMETA_BENCH_CHUNK_KIB:-64 1024}"
TIMEOUT="${THINMETA_BENCH_TIMEOUT:-40m}"

log() { echo "bench-thinmeta: $*" >&2; }

if ! [[ "${GIB}" =~ ^[1-9][0-9]*$ ]] || ((GIB > 12)); then
	log "THINMETA_BENCH_GIB must be 1 to 12 (the standard disks hold 14 GiB), got '${GIB}'"
	exit 2
fi
for chunk in ${CHUNKS}; do
	if ! [[ "${chunk}" =~ ^[1-9][0-9]*$ ]]; then
		log "THINMETA_BENCH_CHUNK_KIB must be chunk sizes in KiB, got '${CHUNKS}'"
		exit 2
	fi
done

# hack/uml-deps.sh installs GNU time too: the test runs the tools under the host's /usr/bin/time
# (its peak RSS figures) inside the guest.
bash hack/uml-deps.sh
if [[ ! -x /usr/bin/time ]]; then
	log "/usr/bin/time (Debian package 'time') is missing; install it first"
	exit 1
fi

WORK="$(mktemp -d /tmp/lvms-bench-thinmeta.XXXXXX)"
trap 'rm -rf "${WORK}"' EXIT

log "building umlrun"
go -C dev build -o "${WORK}/umlrun" ./cmd/umlrun
log "compiling guest tests of ./internal/thinmeta"
CGO_ENABLED=0 go test -c -tags guest -o "${WORK}/thinmeta.test" ./internal/thinmeta

failed=0
for chunk in ${CHUNKS}; do
	name="${GIB}gib-${chunk}kib"
	log "booting a guest: ${GIB} GiB volume, chunk ${chunk} KiB (timeout ${TIMEOUT})"
	rc=0
	"${WORK}/umlrun" -standard-layout -timeout "${TIMEOUT}" \
		-env "THINMETA_BENCH_GIB=${GIB}" -env "THINMETA_BENCH_CHUNK_KIB=${chunk}" \
		-dir "${ROOT}/internal/thinmeta" \
		-- "${WORK}/thinmeta.test" -test.v -test.count=1 -test.run '^TestGuestBenchmark$' \
		>"${WORK}/${name}.log" 2>&1 || rc=$?
	timing="$(sed -n 's/^umlrun: guest timings: //p' "${WORK}/${name}.log" | tail -1)"
	echo "===== thin-metadata benchmark, ${GIB} GiB volume, chunk ${chunk} KiB [guest ${timing:-no timings}]"
	# t.Logf lines look like "    guest_bench_test.go:65: MEASUREMENT delta ..."; drop the prefix.
	sed -n 's/^.*MEASUREMENT //p' "${WORK}/${name}.log"
	if [[ "${rc}" != 0 ]] || ! grep -q '^--- PASS: TestGuestBenchmark' "${WORK}/${name}.log"; then
		failed=1
		case "${rc}" in
		0) echo "===== FAIL (TestGuestBenchmark did not pass; skipped?); guest log:" ;;
		125) echo "===== FAIL (guest did not report an exit code); guest log:" ;;
		*) echo "===== FAIL (exit ${rc}); guest log:" ;;
		esac
		cat "${WORK}/${name}.log"
	fi
done

if ((failed)); then
	echo "bench-thinmeta: FAIL"
	exit 1
fi
echo "bench-thinmeta: PASS"
