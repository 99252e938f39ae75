#!/bin/sh
# Node of the local dev cluster (lvms-dev up), run inside a User-mode Linux guest by
# hack/uml/guest-init.sh. Starts guestbridge on /dev/ttyS1 (the guest's 127.0.0.1:6443 reaches
# the host's kube-apiserver), then the node agent (lvms node) and the kubelet stand-in
# (lvms-dev dev-kubelet), and runs until one of them exits or it is told to stop.
#
# Environment (set by internal/devcluster): NODE_NAME, LVMS (static lvms binary),
# LVMS_DEV (static lvms-dev binary), GUESTBRIDGE,
# API_TARGET (host 127.0.0.1:<apiserver port>), GUEST_KUBECONFIG, LOG_DIR (shared with the host),
# LOG_PREFIX (e.g. node-0).
set -u

log() { echo "dev-node $NODE_NAME: $*"; }

mkdir -p /run/lvms /var/lib/kubelet /var/lib/lvms-dev-kubelet
"$GUESTBRIDGE" -tty /dev/ttyS1 -forward "127.0.0.1:6443=$API_TARGET" -ready /run/lvms/bridge.ready \
	>>"$LOG_DIR/$LOG_PREFIX-guestbridge.log" 2>&1 &
bridge=$!

i=0
while [ ! -e /run/lvms/bridge.ready ]; do
	if ! kill -0 "$bridge" 2>/dev/null || [ "$i" -ge 600 ]; then
		log "guestbridge did not come up; see $LOG_DIR/$LOG_PREFIX-guestbridge.log"
		exit 1
	fi
	i=$((i + 1))
	sleep 0.2
done
log "bridge up"

export KUBECONFIG="$GUEST_KUBECONFIG"
start_agent() {
	"$LVMS" node --nsenter=false --node-name="$NODE_NAME" --namespace=lvms-system \
		--csi-socket=/run/lvms/csi.sock --registration-socket= \
		--metrics-bind-address=0 --health-probe-bind-address=127.0.0.1:9808 \
		>>"$LOG_DIR/$LOG_PREFIX-agent.log" 2>&1 &
	agent=$!
	agent_started=$(date +%s)
}
start_agent
"$LVMS_DEV" dev-kubelet --node-name="$NODE_NAME" --kubeconfig="$GUEST_KUBECONFIG" \
	--csi-socket=/run/lvms/csi.sock >>"$LOG_DIR/$LOG_PREFIX-kubelet.log" 2>&1 &
kubelet=$!
log "node agent pid $agent, dev-kubelet pid $kubelet"

trap 'kill "$agent" "$kubelet" "$bridge" 2>/dev/null; wait; exit 0' TERM INT
# Like a kubelet restarting a crashed DaemonSet pod, a node agent that ends is started again; one
# that ends within 10 s of its start three times in a row is broken, and the node goes down.
quick_exits=0
while kill -0 "$kubelet" 2>/dev/null && kill -0 "$bridge" 2>/dev/null; do
	if ! kill -0 "$agent" 2>/dev/null; then
		wait "$agent"
		rc=$?
		if [ $(($(date +%s) - agent_started)) -lt 10 ]; then quick_exits=$((quick_exits + 1)); else quick_exits=0; fi
		[ "$quick_exits" -ge 3 ] && break
		log "node agent exited with status $rc; restarting it"
		start_agent
	fi
	sleep 1
done
for p in agent:$agent kubelet:$kubelet guestbridge:$bridge; do
	kill -0 "${p#*:}" 2>/dev/null || log "${p%%:*} exited; see $LOG_DIR/$LOG_PREFIX-${p%%:*}.log"
done
# Do not wait for a graceful shutdown: the host is waiting for this guest to end.
kill "$agent" "$kubelet" "$bridge" 2>/dev/null
sleep 2
kill -9 "$agent" "$kubelet" "$bridge" 2>/dev/null
exit 1
