//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

// killAgentScript waits until the node agent runs lvm to create an LV and kills the agent with
// SIGKILL while that command runs: the LV comes into being after the agent died, and the agent
// never learned of it. The kubelet restarts the crashed container of the DaemonSet pod. The [l]
// keeps pgrep and pkill from matching this shell's command line.
const killAgentScript = `echo watching
cmd=
while [ -z "$cmd" ]; do cmd=$(pgrep -af '[l]vm lvcreate'); done
if pkill -9 -f '[l]vms node .*--node-name'; then echo "killed the node agent while it ran: $cmd"; else echo "no node agent to kill"; exit 1; fi`

// TestAgentRestartMidProvisioning kills the node agent while it provisions a volume: after the
// restart the claim is bound and usable, every LV on the node belongs to a LogicalVolume and
// deleting the claim leaves none behind.
func TestAgentRestartMidProvisioning(t *testing.T) {
	fullSetOnly(t, "a node agent killed while it provisions: the claims still bind, no LV leaks")
	e := newEnv(t)
	node := e.nodes()[0]
	e.create(hostPod("killer", node, killAgentScript))
	e.running("killer")

	e.claim("survivor", thinClass, "1Gi", false, "")
	e.pod("user", "survivor", false, node, writeScript)
	_, out := e.finished("killer")
	t.Logf("killer: %s", strings.TrimSpace(out))
	if !strings.Contains(out, "killed the node agent") {
		t.Fatalf("the node agent was not killed: %q", out)
	}
	if _, out := e.finished("user"); !strings.Contains(out, "read=e2e-data") {
		t.Fatalf("pod output %q lacks read=e2e-data", out)
	}
	_, lv := e.volumeOf("survivor")
	e.waitFor("LogicalVolume "+lv.Name+" Created", func(ctx context.Context) (bool, string, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(lv), lv); err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(lv.Status.Conditions, topolvmv1.ConditionCreated)
		return c != nil && c.Status == metav1.ConditionTrue &&
				lv.Status.Code == 0, fmt.Sprintf(
				"%+v, code %d",
				c,
				lv.Status.Code,
			), nil
	})
	e.lvsMatchLogicalVolumes(node)

	if err := e.c.Delete(
		e.ctx(),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: e.ns}},
	); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(
		e.ctx(),
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "survivor", Namespace: e.ns}},
	); err != nil {
		t.Fatal(err)
	}
	e.waitGone(lv)
	e.lvsMatchLogicalVolumes(node)
}

// nodes lists the cluster's nodes by name.
func (e *env) nodes() []string {
	e.t.Helper()
	var list corev1.NodeList
	if err := e.c.List(e.ctx(), &list); err != nil {
		e.t.Fatalf("list nodes: %v", err)
	}
	var names []string
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	if len(names) == 0 {
		e.t.Fatal("the cluster has no nodes")
	}
	slices.Sort(names)
	return names
}

// lvsMatchLogicalVolumes fails unless the LVs in the device classes' volume groups on node (thin
// pools aside) are exactly the volumes of the LogicalVolumes on that node: no leaked LV, none
// missing.
func (e *env) lvsMatchLogicalVolumes(node string) {
	e.t.Helper()
	out := e.onAgent(node, "lvs --noheadings -o lv_name,vg_name,lv_attr")
	onDisk := map[string]bool{}
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || (f[1] != "thick" && f[1] != "thin") || strings.HasPrefix(f[2], "t") {
			continue
		}
		onDisk[f[0]] = true
	}
	var lvs topolvmv1.LogicalVolumeList
	if err := e.c.List(e.ctx(), &lvs); err != nil {
		e.t.Fatalf("list LogicalVolumes: %v", err)
	}
	known := map[string]bool{}
	for _, lv := range lvs.Items {
		if lv.Spec.NodeName == node && lv.Status.VolumeID != "" {
			known[lv.Status.VolumeID] = true
		}
	}
	if !maps.Equal(onDisk, known) {
		e.t.Fatalf(
			"LVs on %s %v, LogicalVolumes there %v\nlvs:\n%s",
			node,
			slices.Sorted(maps.Keys(onDisk)),
			slices.Sorted(maps.Keys(known)),
			out,
		)
	}
	e.t.Logf("LVs on %s match the LogicalVolumes: %v", node, slices.Sorted(maps.Keys(onDisk)))
}
