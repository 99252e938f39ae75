#!/usr/bin/env bash
# Runs the copy-between-nodes benchmark (what `make bench-transfer` calls, and part of `make bench`):
# TestGuestTransferBenchmark of internal/nodeagent (transfer_bench_guest_test.go, `//go:build guest`)
# in one User-mode Linux guest with the standard disk layout (seven 2 GiB disks): a thin snapshot with
# a quarter of its chunks written and a thick volume written whole, each copied through the Transfer
# service (gRPC over mutual TLS on a loopback port, checksums, checkpoints) and by two plain copies of
# the whole device over a loopback TCP connection: `dd | nc` (the floor the ratio is judged against)
# and a kernel copy (sendfile and splice, no byte in user space). It prints the test's MEASUREMENT
# lines: times, bytes moved, throughput and the ratio to each floor (docs/mobility.md "What it costs").
#
# Environment: TRANSFER_BENCH_GIB (default 4) is the volume size in GiB (at most 5 on the standard
# disks: a thin pool of GIB+1 and two thick volumes of GIB share 14 GiB); TRANSFER_BENCH_TIMEOUT
# (default 30m) bounds the guest.
# Exits non-zero if the guest test fails, is skipped, or the guest does not report an exit code.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
GIB="${TRANSFER_BENCH_GIB:-4}"
TIMEOUT="${TRANSFER_BENCH_TIMEOUT:-30m}"

log() { echo "bench-transfer: $*" >&2; }

if ! [[ "${GIB}" =~ ^[1-5]$ ]]; then
	log "TRANSFER_BENCH_GIB must be 1 to 5 (the standard disks hold 14 GiB), got '${GIB}'"
	exit 2
fi
bash hack/uml-deps.sh

WORK="$(mktemp -d /tmp/lvms-bench-transfer.XXXXXX)"
trap 'rm -rf "${WORK}"' EXIT

log "building umlrun"
go -C dev build -o "${WORK}/umlrun" ./cmd/umlrun
log "compiling guest tests of ./internal/nodeagent"
CGO_ENABLED=0 go test -c -tags guest -o "${WORK}/nodeagent.test" ./internal/nodeagent

log "booting a guest: ${GIB} GiB volumes (timeout ${TIMEOUT})"
rc=0
"${WORK}/umlrun" -standard-layout -timeout "${TIMEOUT}" -env "TRANSFER_BENCH_GIB=${GIB}" \
	-dir "${ROOT}/internal/nodeagent" \
	-- "${WORK}/nodeagent.test" -test.v -test.count=1 -test.run '^TestGuestTransferBenchmark$' \
	>"${WORK}/bench.log" 2>&1 || rc=$?
timing="$(sed -n 's/^umlrun: guest timings: //p' "${WORK}/bench.log" | tail -1)"
echo "===== copy-between-nodes benchmark, ${GIB} GiB volumes [guest ${timing:-no timings}]"
sed -n 's/^.*MEASUREMENT //p' "${WORK}/bench.log"
if [[ "${rc}" != 0 ]] || ! grep -q '^--- PASS: TestGuestTransferBenchmark' "${WORK}/bench.log"; then
	echo "===== FAIL (exit ${rc}); guest log:"
	cat "${WORK}/bench.log"
	exit 1
fi
