//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// evacuateLabel is the evacuator's default trigger (lvms evacuator --label).
const evacuateLabel = "lvms.topolvm.io/evacuate"

// evacuationAnnotation is where the evacuator reports a node's evacuation.
const evacuationAnnotation = "lvms.topolvm.io/evacuation"

// TestEvacuatorDrainMode labels a node holding a StatefulSet replica's claim for the evacuator (the
// optional component, installed by lvms-dev up --evacuator). A PodDisruptionBudget first refuses the
// replica's eviction: the evacuator cordons the node, says it waits and moves nothing. Once the budget
// allows it, the replica is evicted, its claim moved, and it runs on the other node with its data; the
// node reports Complete and holds no LV of the StatefulSet.
func TestEvacuatorDrainMode(t *testing.T) {
	fullSetOnly(t, mobilityCost)
	e := newEnv(t)
	e.mobileStorageClass()
	sts := moveStatefulSet(e.ns, "kv", 1, e.nodes()[0])
	e.create(sts)
	defer func() { _ = e.c.Delete(context.Background(), sts) }()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "kv", Namespace: e.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: new(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kv"}}},
	}
	e.create(pdb)
	// The node is preferred, not required: the scheduler may weigh free space higher. The node the
	// replica runs on is the one evacuated.
	node, sum := e.replicaData("kv-0", "")
	other := e.otherNode(node)
	_, oldLV := e.volumeOf("data-kv-0")
	t.Logf("kv-0 runs on %s with data %s (LV %s)", node, sum, oldLV.Status.VolumeID)
	defer e.stopEvacuating(node)
	e.waitNoOtherClaims(node)

	e.patchNode(node, func(n *corev1.Node) { n.Labels[evacuateLabel] = "true" })
	status := e.waitEvacuation(node, "Waiting")
	t.Logf("with the budget: %s", status)
	if !strings.Contains(status, "data-kv-0") || !e.nodeUnschedulable(node) {
		t.Errorf("status %q, node unschedulable %t; want the claim waiting on a cordoned node", status,
			e.nodeUnschedulable(node))
	}
	if _, lv := e.volumeOf("data-kv-0"); lv.Spec.NodeName != node {
		t.Fatalf("the claim moved to %s while its budget refused the eviction", lv.Spec.NodeName)
	}

	base := pdb.DeepCopy()
	pdb.Spec.MinAvailable = new(intstr.FromInt32(0))
	if err := e.c.Patch(e.ctx(), pdb, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	t.Logf("when done: %s", e.waitEvacuation(node, "Complete"))
	if on, got := e.replicaData("kv-0", other); got != sum {
		t.Errorf("kv-0 on %s reads data %s, wrote %s", on, got, sum)
	}
	if _, lv := e.volumeOf("data-kv-0"); lv.Spec.NodeName != other {
		t.Errorf("claim data-kv-0 on %s", lv.Spec.NodeName)
	}
	e.lvsMatchLogicalVolumes(node)
	if attr := lvAttr(e.lvs(node), oldLV.Status.VolumeID); attr != "" {
		t.Errorf("the old LV %s is still on %s (%s)", oldLV.Status.VolumeID, node, attr)
	}
}

// evacuationTimeout bounds the wait for one evacuation step: the next pass (30 s), the evicted pod's
// grace period (30 s), a move (about 3 min here, as TestMove's), the moved replica Ready again.
const evacuationTimeout = 10 * time.Minute

// waitEvacuation waits until the node's evacuation status starts with prefix and returns it.
func (e *env) waitEvacuation(node, prefix string) string {
	e.t.Helper()
	var status string
	what := "node " + node + " evacuation " + prefix
	e.waitForWithin(evacuationTimeout, what, func(ctx context.Context) (bool, string, error) {
		n := &corev1.Node{}
		if err := e.c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return false, "", err
		}
		status = n.Annotations[evacuationAnnotation]
		return strings.HasPrefix(status, prefix), status, nil
	})
	return status
}

func (e *env) nodeUnschedulable(node string) bool {
	n := &corev1.Node{}
	if err := e.c.Get(e.ctx(), client.ObjectKey{Name: node}, n); err != nil {
		e.t.Fatal(err)
	}
	return n.Spec.Unschedulable
}

// patchNode changes the node with f (labels and annotations are never nil in f).
func (e *env) patchNode(node string, f func(*corev1.Node)) {
	e.t.Helper()
	n := &corev1.Node{}
	ctx := context.Background()
	if err := e.c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		e.t.Fatal(err)
	}
	base := n.DeepCopy()
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	f(n)
	if err := e.c.Patch(ctx, n, client.MergeFrom(base)); err != nil {
		e.t.Fatalf("patch node %s: %v", node, err)
	}
}

// stopEvacuating removes the trigger and the status from the node and uncordons it, for the tests after.
func (e *env) stopEvacuating(node string) {
	e.patchNode(node, func(n *corev1.Node) {
		delete(n.Labels, evacuateLabel)
		delete(n.Annotations, evacuationAnnotation)
	})
	e.uncordon(node)
}
