//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// nodeNetPort is the port of TestNodeNetwork's servers ($PORT in the scripts).
	nodeNetPort = "9000"
	// nodeNetBytes is how much a pod fetches from a pod on the other node, unless
	// E2E_NODENET_BYTES says otherwise.
	nodeNetBytes = 8 << 20
	// nodeNetSmall is the size of each of the concurrent fetches and of the node's own fetch.
	nodeNetSmall = 256 << 10
	// nodeNetConns is how many small fetches run at once.
	nodeNetConns = 4
)

// nodeNetServer serves random bytes on nodeNetPort, one process per connection: it reads the
// byte count the client asks for, sends that many bytes and logs "sent <bytes> <sha256>". (No
// "$$" in pod commands: Kubernetes turns it into "$".)
const nodeNetServer = `cat >/tmp/send <<'EOF'
read -r n
f=$(mktemp -u /tmp/sent.XXXXXX)
busybox mkfifo "$f"
sha256sum <"$f" >"$f.sum" &
head -c "$n" /dev/urandom | tee "$f"
wait
echo "sent $n $(cut -d' ' -f1 "$f.sum")" >&2
rm -f "$f" "$f.sum"
EOF
exec busybox nc -ll -p "$PORT" -e sh /tmp/send
`

// nodeNetClient fetches from $SERVER: $BYTES from the pod's own network namespace, then
// nodeNetConns small fetches at once, then a small one from the node's network namespace (PID
// 1's: the pod runs with hostPID), printing "received <name> <bytes> <sha256> <seconds>" for each.
const nodeNetClient = `fetch() { # fetch NAME BYTES [COMMAND...]
	name=$1 want=$2
	shift 2
	f=/tmp/got.$name
	busybox mkfifo "$f"
	sha256sum <"$f" >"$f.sum" &
	t0=$(cut -d' ' -f1 /proc/uptime)
	n=$(echo "$want" | "$@" busybox nc "$SERVER" "$PORT" | tee "$f" | wc -c)
	t1=$(cut -d' ' -f1 /proc/uptime)
	wait
	echo "received $name $n $(cut -d' ' -f1 "$f.sum") $(awk "BEGIN {print $t1 - $t0}")"
}
fetch pod "$BYTES"
for i in $(seq $CONNS); do fetch conn$i $SMALL & done
wait
fetch node $SMALL busybox nsenter --target=1 --net --
`

// TestNodeNetwork shows that TCP crosses nodes, which the node agents' transfers between nodes
// need: a pod on each node fetches from a pod on the other node by pod IP, over the nodes' own
// network (each guest's eth0 on the supervisor's switch, docs/real-nodes.md). In each direction the client pod fetches E2E_NODENET_BYTES
// (default 8 MiB) of random bytes, then four smaller fetches at once, then one from the node's
// own network namespace; every fetch's byte count and SHA-256 equal what the server sent, and
// each one's throughput is logged. A client half-closes once it has sent its request, so a long
// fetch (E2E_NODENET_BYTES=268435456 takes about 8 min, bound by the shell tools at both ends)
// also shows that a half-closed connection keeps receiving.
func TestNodeNetwork(t *testing.T) {
	fullSetOnly(t, "pod traffic between the nodes in both directions")
	e := connect(t)
	e.createNamespace()
	size := nodeNetBytes
	if v := os.Getenv("E2E_NODENET_BYTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("E2E_NODENET_BYTES=%q: want a positive byte count", v)
		}
		size = n
	}
	nodes := e.nodes()
	if len(nodes) < 2 {
		t.Skipf("needs two nodes, the cluster has %d", len(nodes))
	}
	from, to := nodes[0], nodes[1]
	servers := map[string]*corev1.Pod{}
	for _, node := range []string{from, to} {
		pod := newPod("server-"+node, nodeNetServer)
		pod.Spec.NodeName = node
		pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PORT", Value: nodeNetPort}}
		e.create(pod)
	}
	for _, node := range []string{from, to} {
		servers[node] = e.running("server-" + node)
	}
	for _, dir := range [][2]string{{from, to}, {to, from}} {
		t.Run(dir[0]+"-from-"+dir[1], func(t *testing.T) {
			e := *e
			e.t = t
			e.fetchAcross(dir[0], servers[dir[1]], size)
		})
	}
}

// fetchAcross runs the client on node against the server pod on another node and compares what
// the client received with what the server sent.
func (e *env) fetchAcross(node string, server *corev1.Pod, size int) {
	e.t.Helper()
	name := "client-" + node
	pod := newPod(name, nodeNetClient)
	pod.Spec.NodeName = node
	pod.Spec.HostPID = true // nsenter into the node's network namespace
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: new(true)}
	pod.Spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "SERVER", Value: server.Status.PodIP}, {Name: "PORT", Value: nodeNetPort},
		{Name: "BYTES", Value: strconv.Itoa(size)},
		{Name: "SMALL", Value: strconv.Itoa(nodeNetSmall)}, {Name: "CONNS", Value: strconv.Itoa(nodeNetConns)},
	}
	e.create(pod)
	// The bridges carry well over 100 kB/s each way (about 1 MB/s measured).
	limit := timeout + time.Duration(size/100_000)*time.Second
	e.waitForWithin(limit, "pod "+name+" Succeeded", func(ctx context.Context) (bool, string, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, "", err
		}
		if pod.Status.Phase == corev1.PodFailed {
			return false, "", fmt.Errorf("pod %s failed: %s", name, e.output(pod))
		}
		return pod.Status.Phase == corev1.PodSucceeded, string(pod.Status.Phase), nil
	})
	out := e.output(pod)
	want := map[string]int{"pod": size, "node": nodeNetSmall}
	for i := range nodeNetConns {
		want[fmt.Sprintf("conn%d", i+1)] = nodeNetSmall
	}
	var sent string
	e.waitFor("server "+server.Name+" to log what it sent", func(context.Context) (bool, string, error) {
		sent = e.output(server)
		n := strings.Count(sent, "sent ")
		return n >= len(want), fmt.Sprintf("%d of %d fetches served", n, len(want)), nil
	})
	e.checkFetches(fetchLines(out), want, sent, server.Spec.NodeName)
}

// checkFetches compares the client's "received NAME BYTES SHA256 SECONDS" lines with the sizes
// it asked for and with the server's "sent BYTES SHA256" lines, and logs the throughput of each.
func (e *env) checkFetches(received map[string][]string, want map[string]int, sent, from string) {
	e.t.Helper()
	for name, size := range want {
		r, ok := received[name]
		if !ok {
			e.t.Errorf("fetch %s from %s: no result", name, from)
			continue
		}
		n, _ := strconv.Atoi(r[1])
		secs, _ := strconv.ParseFloat(r[3], 64)
		if n != size || !strings.Contains(sent, fmt.Sprintf("sent %d %s\n", n, r[2])) {
			e.t.Errorf("fetch %s from %s: received %d bytes with sha256 %s, want %d bytes as sent:\n%s",
				name, from, n, r[2], size, sent)
			continue
		}
		rate := "n/a"
		if secs > 0 {
			rate = fmt.Sprintf("%.2f MB/s", float64(n)/secs/1e6)
		}
		e.t.Logf("fetch %s from a pod on %s: %d bytes in %.2f s (%s), sha256 %s as sent",
			name, from, n, secs, rate, r[2])
	}
}

// fetchLines maps the NAME of each "received NAME BYTES SHA256 SECONDS" line of out to its fields.
func fetchLines(out string) map[string][]string {
	lines := map[string][]string{}
	for l := range strings.SplitSeq(out, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(l), "received ")
		if f := strings.Fields(rest); ok && len(f) == 4 {
			lines[f[0]] = f
		}
	}
	return lines
}
