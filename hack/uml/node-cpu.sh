#!/usr/bin/env bash
# Host CPU of each node of a running dev cluster, in % of one core, over SECONDS (default 60):
# the utime+stime that the node's linux.uml processes (one host process per guest process
# address space, plus UML's helpers) accumulate in /proc/<pid>/stat. Processes that exit during
# the window are not counted, so the figure is a lower bound for busy nodes; at idle it is exact.
#
#   hack/uml/node-cpu.sh [STATE_DIR] [SECONDS]
set -euo pipefail

state="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/lvms/dev-cluster}"
secs="${2:-60}"
hz=$(getconf CLK_TCK)

# ticks PATTERN: summed utime+stime of the processes whose command line contains PATTERN.
ticks() {
	local t=0 p f
	for p in $(pgrep -f -- "$1" || true); do
		# Fields after the ")" that ends the command name: state is 1st, utime 12th, stime 13th.
		read -r -a f < <(sed 's/^.*) //' "/proc/${p}/stat" 2>/dev/null) || continue
		t=$((t + ${f[11]:-0} + ${f[12]:-0}))
	done
	echo "${t}"
}

guests=("${state}"/guests/lvms-uml-*)
[[ -d "${guests[0]}" ]] || { echo "no running guests under ${state}/guests" >&2; exit 1; }
declare -A before
for g in "${guests[@]}"; do before[$g]=$(ticks "linux.uml.*${g}/"); done
sleep "${secs}"
for g in "${guests[@]}"; do
	after=$(ticks "linux.uml.*${g}/")
	d=$((after - ${before[$g]}))
	node=$(grep -o "NODE_NAME=[^' ]*" "${g}/spec.sh" 2>/dev/null | cut -d= -f2 || true)
	printf '%s (%s): %d ticks in %ss = %d.%d%% of one core\n' "${node:-?}" "$(basename "${g}")" "${d}" "${secs}" \
		$((d * 100 / (hz * secs))) $((d * 1000 / (hz * secs) % 10))
done
