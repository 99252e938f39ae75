# Shared by the scripts that run a suite on a dev cluster of their own (hack/e2e.sh, hack/upgrade.sh,
# hack/conformance.sh, dev/bench/cluster.sh); sourced, not run. They define log() before calling.

# devcluster_finish ends such a run from its EXIT trap: with keep=1 it leaves the cluster up and says
# how to reach it; otherwise it tears the cluster down, turns anything left of it (process, guest,
# mount, listener) into a failure, removes the run's temporary directory and logs PASS, or FAIL with
# where to look. It exits with the run's status.
#
#   devcluster_finish RC KEEP LVMS_DEV STATE_DIR TMP_DIR "where to look on failure" ["what to say on success"]
devcluster_finish() {
	local rc="$1" keep="$2" lvms_dev="$3" state="$4" tmp="$5" where="$6" ok="${7:-PASS}"
	if [[ "${keep}" == 1 ]]; then
		log "cluster kept: export KUBECONFIG=${state}/kubeconfig; stop it with ${lvms_dev} down --state-dir ${state}"
		exit "${rc}"
	fi
	"${lvms_dev}" down --state-dir "${state}" >&2 || true
	if ! "${lvms_dev}" status --state-dir "${state}" --check-clean >&2; then
		log "FAIL: something of the dev cluster is left after lvms-dev down"
		rc=1
	fi
	rm -rf "${tmp}"
	if [[ ${rc} -eq 0 ]]; then log "${ok}"; else log "FAIL (${where})"; fi
	exit "${rc}"
}
