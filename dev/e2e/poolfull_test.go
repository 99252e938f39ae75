//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// poolFullWait bounds how long a change of a pool's fill level takes to show in the LVMCluster: the
// node agent looks at its thin pools once a minute (vgmanager.DefaultDiscoveryInterval).
const poolFullWait = 3 * time.Minute

// TestPoolFullDegrades: filling a thin pool past 85% makes the node's volume group, the
// LVMVolumeGroup and the LVMCluster Degraded with a reason that names the pool and its fill level,
// as `kubectl get` prints it; freeing the space makes them Ready again.
func TestPoolFullDegrades(t *testing.T) {
	fullSetOnly(t, "a thin pool filled to 90 % degrades the LVMCluster and recovers")
	e := newEnv(t)
	node := e.nodes()[0]
	chunk, pool := e.thinPool(node)
	chunks := (pool*9/10 + chunk - 1) / chunk // 90% of the pool, in whole chunks
	e.claim("fill", tenantThin, strconv.Itoa(pool), true, "")
	e.pod("fill", "fill", true, node, fmt.Sprintf(
		"dd if=/dev/zero of=/dev/xvda bs=%d count=%d 2>&1 && sync", chunk, chunks))
	e.finished("fill")

	want := fmt.Sprintf("thin pool %s is ", tenantPool)
	e.waitForLVMCluster(lvmv1alpha1.LVMStatusDegraded, "full of data (Degraded from 85%)")
	out := kubectl(t, "get", "lvmcluster,lvmvolumegroup,lvmvolumegroupnodestatus", "-n", operatorNS)
	for _, line := range []string{
		"lvmcluster.lvm.topolvm.io/",
		"lvmvolumegroup.lvm.topolvm.io/" + tenantThinVG + " ",
		"lvmvolumegroupnodestatus.lvm.topolvm.io/" + node + " ",
	} {
		row := rowOf(out, line)
		notReady := strings.Contains(row, "Degraded") || strings.Contains(row, "False")
		if !notReady || !strings.Contains(row, want) {
			t.Errorf("kubectl get prints for %s%q, want it Degraded (or not Ready) with %q:\n%s", line, row, want, out)
		}
	}
	t.Logf("kubectl get lvmcluster,lvmvolumegroup,lvmvolumegroupnodestatus -n %s, pool %s on %s filled to %d of its "+
		"%d MiB:\n%s", operatorNS, tenantPool, node, chunks*chunk>>20, pool>>20, out)

	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "fill"}}
	_, lv := e.volumeOf("fill")
	if err := e.c.Delete(
		e.ctx(),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "fill"}},
	); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(e.ctx(), pvc); err != nil {
		t.Fatal(err)
	}
	e.waitGone(lv)
	e.waitForLVMCluster(lvmv1alpha1.LVMStatusReady, "")
}

// waitForLVMCluster waits until the suite's LVMCluster is in state with a VolumeGroupsReady message
// containing msg.
func (e *env) waitForLVMCluster(state lvmv1alpha1.LVMStateType, msg string) {
	e.t.Helper()
	e.waitForWithin(poolFullWait, "LVMCluster "+string(state), func(ctx context.Context) (bool, string, error) {
		var list lvmv1alpha1.LVMClusterList
		if err := e.c.List(ctx, &list, client.InNamespace(operatorNS)); err != nil || len(list.Items) != 1 {
			return false, fmt.Sprintf("%d LVMClusters", len(list.Items)), err
		}
		c := list.Items[0]
		cond := meta.FindStatusCondition(c.Status.Conditions, lvmv1alpha1.ConditionVolumeGroupsReady)
		if cond == nil {
			return false, string(c.Status.State), nil
		}
		return c.Status.State == state && strings.Contains(cond.Message, msg),
			string(c.Status.State) + ": " + cond.Message, nil
	})
}

// kubectl runs the kubectl binary (KUBECTL, else kubectl on PATH) with the suite's kubeconfig.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	bin := os.Getenv("KUBECTL")
	if bin == "" {
		bin = "kubectl"
	}
	out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// rowOf returns the line of kubectl's output that starts with prefix, "" when none does.
func rowOf(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
