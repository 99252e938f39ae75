#!/bin/sh
# Node of the local dev cluster (lvms-dev up), run inside a User-mode Linux guest by
# hack/uml/guest-init.sh: containerd + crun and the real kubelet. See docs/real-nodes.md and
# PROVING-GROUND §D for why each step is here.
#
# Environment (set by dev/internal/devcluster): NODE_NAME, NODE_IP (10.100.0.N, the kubelet's
# --node-ip), POD_CIDR, NODE_DIR (host dir with
# kubeconfig, kubelet.yaml, containerd.toml, cni/), KUBELET, GUESTBRIDGE, API_TARGET (host
# 127.0.0.1:<apiserver port>), API_PORT (guest port of the bridged apiserver), LINK_ADDR (eth0's
# address on the network between the nodes, e.g. 10.101.0.1/24), LINK_ROUTES (space-separated
# CIDR=GATEWAY: each other node's pod network and its link address), IMAGES (colon-separated OCI
# archives to import), LOG_DIR (shared with the host), LOG_PREFIX (e.g. node-0).
# Logs: $LOG_DIR/$LOG_PREFIX-{containerd,kubelet,guestbridge}.log.
set -u

log() { echo "real-node $NODE_NAME: $*"; }
fail() {
	log "FAILED: $*"
	exit 1
}
started=$(date +%s)
elapsed() { echo "$(($(date +%s) - started))s"; }

# Kernel pieces: cgroup v2 (kubelet 1.37 refuses v1), netfilter for the Service DNAT and the
# traffic to other nodes' pods, bridge and veth for the pod network. Module autoload does not
# work in these guests.
for m in bridge veth x_tables ip_tables iptable_filter iptable_nat nf_conntrack nf_nat xt_nat \
	xt_comment xt_mark xt_addrtype xt_conntrack xt_MASQUERADE iptable_mangle nf_reject_ipv4 \
	ipt_REJECT; do
	modprobe "$m" || fail "modprobe $m"
done
mount -t cgroup2 cgroup2 /sys/fs/cgroup || fail "mount cgroup2"
for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
	echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control || fail "enable cgroup controller $c"
done

# cAdvisor wants a clock speed; UML has no cpufreq and no "cpu MHz" line.
mhz=$(awk '/^bogomips/ {printf "%d", $3 / 2; exit}' /proc/cpuinfo)
{
	sed '/^$/d' /proc/cpuinfo
	printf 'cpu MHz\t\t: %s.000\n\n' "${mhz:-1000}"
} >/run/cpuinfo
mount --bind /run/cpuinfo /proc/cpuinfo || fail "bind cpuinfo"

# State on tmpfs: overlayfs cannot use the hostfs-backed root as an upper dir.
for d in /var/lib/containerd /var/lib/kubelet /var/log /var/lib/cni /run/containerd; do
	mkdir -p "$d" && mount -t tmpfs -o mode=0755 tmpfs "$d" || fail "tmpfs on $d"
done
# Bidirectional mount propagation (the CSI node plugin's mounts) needs shared mounts.
mount --make-rshared / || fail "make / rshared"
mkdir -p /run/lvms-node /etc/kubernetes
: >/run/lvms-node/resolv.conf
cat /proc/sys/kernel/random/uuid | tr -d - >/etc/machine-id
hostname "$NODE_NAME"
echo "127.0.0.1 localhost $NODE_NAME" >/etc/hosts

# Addresses: the node IP and the Service address of the apiserver live on lo; the DNAT sends
# 10.0.0.1:443 (in-cluster config) to the bridged apiserver port, from the node and from pods.
ip addr add "$NODE_IP/32" dev lo || fail "node IP"
ip addr add 10.0.0.1/32 dev lo || fail "service IP"
sysctl -qw net.ipv4.conf.all.route_localnet=1 net.ipv4.ip_forward=1 || fail "sysctl"
# kubelet and the CNI plugins call "iptables": make that the legacy one (no nft userspace here).
for t in iptables ip6tables; do
	for s in "" -save -restore; do
		ln -sf "/usr/sbin/$t-legacy$s" "/usr/local/sbin/$t$s" || fail "link $t$s"
	done
done
for chain in PREROUTING OUTPUT; do
	iptables -t nat -A "$chain" -d 10.0.0.1/32 -p tcp --dport 443 \
		-j DNAT --to-destination "127.0.0.1:$API_PORT" || fail "DNAT in $chain"
done
# Other nodes' pods: eth0 is on the network between the nodes (the supervisor's switch; see
# docs/real-nodes.md), and each other node's pod network and node IP are routed to that node's
# address there. The node's own pod network stays on cni0.
ip link set eth0 up || fail "eth0 up"
ip addr add "$LINK_ADDR" dev eth0 || fail "eth0 address"
for r in $LINK_ROUTES; do
	ip route add "${r%%=*}" via "${r#*=}" dev eth0 || fail "route $r"
done
log "kernel, mounts and network set up ($(elapsed))"

"$GUESTBRIDGE" -tty /dev/ttyS1 -forward "127.0.0.1:$API_PORT=$API_TARGET" -allow-net "$POD_CIDR" \
	-ready /run/lvms-node/bridge.ready >>"$LOG_DIR/$LOG_PREFIX-guestbridge.log" 2>&1 &
bridge=$!
containerd --config "$NODE_DIR/containerd.toml" >>"$LOG_DIR/$LOG_PREFIX-containerd.log" 2>&1 &
containerd=$!

# wait_for FILE PID WHAT: until FILE exists, failing when PID ends or after 120 s.
wait_for() {
	i=0
	while [ ! -e "$1" ]; do
		kill -0 "$2" 2>/dev/null || fail "$3 exited; see its log in $LOG_DIR"
		[ "$i" -ge 600 ] && fail "$3 did not come up"
		i=$((i + 1))
		sleep 0.2
	done
}
wait_for /run/containerd/containerd.sock "$containerd" containerd
log "containerd up ($(elapsed))"

# Images come from OCI archives on the host (no registry): import each, unpacked.
old_ifs=$IFS
IFS=:
for img in $IMAGES; do
	ctr -n k8s.io images import "$img" >/dev/null 2>>"$LOG_DIR/$LOG_PREFIX-containerd.log" ||
		fail "import $img (see $LOG_DIR/$LOG_PREFIX-containerd.log)"
	log "imported $(basename "$img") ($(elapsed))"
done
IFS=$old_ifs
# Manifests pin images by digest (repo@sha256:...); the CRI plugin resolves only names that exist
# in containerd, and an import creates the tag name alone: add the digest name of each image.
ctr -n k8s.io images ls | awk 'NR > 1 && $1 !~ /^sha256:/ && $1 !~ /@/ {
	ref = $1; sub(/:[^:\/]*$/, "", ref); print $1, ref "@" $3 }' |
	while read -r name digest_ref; do
		ctr -n k8s.io images tag --force "$name" "$digest_ref" >/dev/null || exit 1
	done || fail "tag the images by digest"

wait_for /run/lvms-node/bridge.ready "$bridge" guestbridge
log "bridge up ($(elapsed))"
"$KUBELET" --config="$NODE_DIR/kubelet.yaml" --kubeconfig="$NODE_DIR/kubeconfig" \
	--hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --housekeeping-interval=60s --v=0 \
	>>"$LOG_DIR/$LOG_PREFIX-kubelet.log" 2>&1 &
kubelet=$!
log "kubelet pid $kubelet"

trap 'kill "$kubelet" 2>/dev/null; kill "$containerd" "$bridge" 2>/dev/null; wait; exit 0' TERM INT
# Every 5 s, not every second: each sleep is a fork and exec, which cost a single-CPU UML guest a
# visible share of its CPU. The wait returns at once when TERM or INT comes.
while kill -0 "$kubelet" 2>/dev/null && kill -0 "$containerd" 2>/dev/null && kill -0 "$bridge" 2>/dev/null; do
	sleep 5 &
	wait $! || true
done
for p in kubelet:$kubelet containerd:$containerd guestbridge:$bridge; do
	kill -0 "${p#*:}" 2>/dev/null || log "${p%%:*} exited; see $LOG_DIR/$LOG_PREFIX-${p%%:*}.log"
done
# Do not wait for a graceful shutdown: the host is waiting for this guest to end.
kill "$kubelet" "$containerd" "$bridge" 2>/dev/null
sleep 2
kill -9 "$kubelet" "$containerd" "$bridge" 2>/dev/null
exit 1
