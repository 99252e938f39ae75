#!/usr/bin/env bash
# Runs every phase of `make test` and prints each phase's time and the total (what `make test` and
# CI's .ci/run call).
#
# The tools phase runs first. Then two lanes run side by side, because the e2e mostly waits (its
# cluster keeps the two cores about 45 % busy, docs/e2e.md): lane "e2e" (images, a 2-node cluster
# and the suite; then the storage conformance subset on a fresh cluster, docs/conformance.md) and
# lane "host" (test-unit, fuzz, test-lvm, sanity, check-dist, test-rules, verify, upgrade;
# verify after check-dist and test-rules, as it regenerates dist/, the chart and the bundle in place,
# which they read; upgrade last, on a dev cluster of its own, while the e2e lane runs its subset).
# The host lane starts once the e2e lane's LVMCluster is Ready (wait_for_e2e_cluster), at nice 19
# (host_priority), so that the e2e lane's nodes get the CPU first. The host lane prints
# as it runs; the e2e lane writes to a log that is printed when it ends. A failing phase stops its own lane; the other lane still runs to its end, so one run reports
# both. TEST_LANES=1 runs the phases one after another in the order below, as before 2026-11-27.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
MAKE="${MAKE:-make}"
HOST_LANE=(test-unit fuzz test-lvm sanity check-dist test-rules verify upgrade)
E2E_LANE=(e2e conformance-subset)
WORK="$(mktemp -d)"
START=${SECONDS}
trap 'rm -rf "${WORK}"' EXIT
trap 'trap - INT TERM; kill 0; exit 130' INT TERM

# lane runs the phases given after its name one after another, stopping at the first failure, and
# appends "name seconds" (or "name seconds FAILED") per phase to ${WORK}/times.
lane() {
	local name="$1" phase t
	shift
	for phase in "$@"; do
		t=${SECONDS}
		if ! "${MAKE}" --no-print-directory "${phase}"; then
			echo "${phase} $((SECONDS - t)) FAILED" >>"${WORK}/times"
			echo "make test: phase ${phase} FAILED; the ${name} lane stops here" >&2
			return 1
		fi
		echo "${phase} $((SECONDS - t))" >>"${WORK}/times"
	done
}

# wait_for_e2e_cluster holds the host lane back until the e2e lane's LVMCluster is Ready (the suite
# writes lvmcluster-ready in the cluster's state directory), the cluster failed, or the lane ended;
# at most E2E_UP_WAIT seconds (default 1500). On 2026-11-29 the product and then the node agents,
# starting on UML nodes beside the host lane's -race tests and guests, missed their deadlines three
# times (the operator's startup probe, 5 min; the agents' plans, 5 min; the LVMCluster, 10 min). The
# host lane, the longer one, then starts about 12 min later; the rest of the e2e lane mostly waits.
wait_for_e2e_cluster() {
	local pid="$1" state="${E2E_STATE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms/e2e-cluster}" t=${SECONDS}
	while ((SECONDS - t < ${E2E_UP_WAIT:-1500})) && kill -0 "${pid}" 2>/dev/null; do
		for f in lvmcluster-ready failed; do
			if [[ "${state}/${f}" -nt "${WORK}/lanes-started" ]]; then
				echo "make test: ${f} in the e2e cluster after $((SECONDS - t)) s; the host lane starts"
				return
			fi
		done
		sleep 5
	done
	echo "make test: the host lane starts after $((SECONDS - t)) s"
}

# host_priority lowers the CPU priority of the calling subshell, and so of everything the host lane
# starts, to nice TEST_HOST_NICE (default 19). The e2e lane's nodes are single-CPU UML guests whose
# every system call is a round trip through the host: at rest a node's kubelet, containerd and the
# product keep its one CPU busy, an exec into a node took 10 to 66 s on an otherwise idle 2-core host
# (2026-11-29), and the suite's waits (2 to 10 min) ran out once the host lane's -race builds and
# guests took the cores (CI at 144c409: the first timeout 2 min after the host lane started, then
# the operator's liveness restarts and every later test). The host lane's phases have coarse
# deadlines and only need throughput, so they take what the e2e lane leaves.
host_priority() {
	renice -n "${TEST_HOST_NICE:-19}" -p "${BASHPID}" >/dev/null
}

rc=0
if [[ "${TEST_LANES:-2}" == 1 ]]; then
	lane all tools test-unit fuzz test-lvm sanity e2e conformance-subset check-dist test-rules verify upgrade || rc=1
else
	lane tools tools || rc=1
	if [[ ${rc} -eq 0 ]]; then
		echo "make test: the e2e lane (${E2E_LANE[*]}) runs beside the host lane; its output follows" \
			"the host lane's"
		touch "${WORK}/lanes-started"
		lane e2e "${E2E_LANE[@]}" >"${WORK}/e2e.log" 2>&1 &
		e2e_pid=$!
		wait_for_e2e_cluster "${e2e_pid}"
		# The host lane runs at a lower CPU priority (TEST_HOST_NICE, default 19): see host_priority.
		(host_priority && lane host "${HOST_LANE[@]}") || rc=1
		wait "${e2e_pid}" || rc=1
		echo "make test: ---- output of the e2e lane ----"
		cat "${WORK}/e2e.log"
		echo "make test: ---- end of the e2e lane ----"
	fi
fi
echo "make test: phase times"
while read -r phase secs failed; do
	printf '  %-11s %5d s%s\n' "${phase}" "${secs}" "${failed:+ ${failed}}"
done <"${WORK}/times"
if [[ ${rc} -ne 0 ]]; then
	echo "make test: FAILED after $((SECONDS - START)) s"
	exit 1
fi
echo "make test: all passed in $((SECONDS - START)) s"
