//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// moveScript writes 4 MiB of random data and its sha256 once, then at every start prints the sha256
// of the data and the one stored, and stays up.
const moveScript = `set -e
if [ ! -f /data/big ]; then
  dd if=/dev/urandom of=/data/big bs=1048576 count=4 2>/dev/null; sha256sum /data/big | cut -c1-64 > /data/sum; sync
fi
echo "data=$(sha256sum /data/big | cut -c1-64) stored=$(cat /data/sum)"
exec sleep 100000`

var moveLine = regexp.MustCompile(`data=([0-9a-f]{64}) stored=([0-9a-f]{64})`)

// TestMove moves the claim of a running StatefulSet's replica to the other node with `kubectl lvms
// move --stop-workload --yes`: the replica runs again on the other node with the data it wrote, the
// claim keeps its name, labels and owner, and the node it left holds no LV of ours for it.
func TestMove(t *testing.T) {
	fullSetOnly(t, mobilityCost)
	e := newEnv(t)
	e.mobileStorageClass()
	sts := moveStatefulSet(e.ns, "db", 1, "")
	e.create(sts)
	defer func() { _ = e.c.Delete(context.Background(), sts) }()
	from, sum := e.replicaData("db-0", "")
	to := e.otherNode(from)
	defer e.uncordon(from) // should the move fail halfway, the next tests get their node back
	pv, lv := e.volumeOf("data-db-0")
	t.Logf("db-0 runs on %s with data %s on PV %s (LV %s)", from, sum, pv.Name, lv.Status.VolumeID)

	out := kubectl(t, "lvms", "move", "pvc/data-db-0", "--to", to, "-n", e.ns, "--stop-workload", "--yes")
	t.Logf("kubectl lvms move:\n%s", out)
	for _, want := range []string{"Cordoned node " + from, "copy: Complete", "Uncordoned node " + from, "Moved claim"} {
		if !strings.Contains(out, want) {
			t.Errorf("move's output lacks %q", want)
		}
	}
	node, got := e.replicaData("db-0", to)
	if node != to || got != sum {
		t.Fatalf("db-0 runs on %s with data %s; want %s with %s", node, got, to, sum)
	}
	newPV, newLV := e.volumeOf("data-db-0")
	claim := &corev1.PersistentVolumeClaim{}
	if err := e.c.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: "data-db-0"}, claim); err != nil {
		t.Fatal(err)
	}
	if newLV.Spec.NodeName != to || newPV.Name == pv.Name || claim.Labels["app"] != "db" {
		t.Fatalf("claim %s on PV %s, LV on %s, labels %v", claim.Name, newPV.Name, newLV.Spec.NodeName, claim.Labels)
	}
	e.waitFor("the old PV deleted", func(ctx context.Context) (bool, string, error) {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(pv), &corev1.PersistentVolume{})
		return client.IgnoreNotFound(err) == nil && err != nil, "", client.IgnoreNotFound(err)
	})
	if attr := lvAttr(e.lvs(from), lv.Status.VolumeID); attr != "" {
		t.Errorf("the old LV %s is still on %s (%s)", lv.Status.VolumeID, from, attr)
	}
	e.lvsMatchLogicalVolumes(from)
	n := &corev1.Node{}
	if err := e.c.Get(e.ctx(), client.ObjectKey{Name: from}, n); err != nil || n.Spec.Unschedulable {
		t.Errorf("node %s unschedulable %t, %v", from, n.Spec.Unschedulable, err)
	}
}

// mobilityCost is why the tests that copy volumes between nodes are in the full set only: each
// takes minutes on the local cluster (TestCrossNodeRestore 37 min at 9861e0c), more than make
// test's share of CI's time allows. Until 9861e0c they ran only with E2E_MOBILITY=1: their copies
// crossed the serial-line relay at about 0.5 MB/s and starved the target node; the nodes' own
// network carries them at a few MB/s (docs/real-nodes.md).
const mobilityCost = "copies volumes between nodes, minutes per test on the local cluster"

// moveStatefulSet is a StatefulSet whose replicas keep moveScript's data in a claim
// data-<name>-<n> of mobileClass each (the test creates it: env.mobileStorageClass), started in
// parallel, preferring node prefer when it is not "".
func moveStatefulSet(ns, name string, replicas int32, prefer string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	pod := newPod("", moveScript)
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	// The StatefulSet controller adds the claim's volume "data".
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: mountPath}}
	if prefer != "" {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100,
				Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{prefer}}}}}},
		}}
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: new(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template:            corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: labels},
				Spec: corev1.PersistentVolumeClaimSpec{
					StorageClassName: new(mobileClass),
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: resource.MustParse(mobileSize)}},
				},
			}},
		},
	}
}

// replicaData waits until the pod runs (on node, unless "") and has printed its data's sha256 equal
// to the one it stored; it returns the node and the sha256.
func (e *env) replicaData(name, node string) (string, string) {
	e.t.Helper()
	var pod corev1.Pod
	var sum string
	e.waitFor(
		fmt.Sprintf("pod %s running on %q with its data", name, node),
		func(ctx context.Context) (bool, string, error) {
			if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &pod); err != nil {
				return false, "", client.IgnoreNotFound(err)
			}
			if pod.Status.Phase != corev1.PodRunning || (node != "" && pod.Spec.NodeName != node) {
				return false, fmt.Sprintf("%s on %q", pod.Status.Phase, pod.Spec.NodeName), nil
			}
			m := moveLine.FindStringSubmatch(e.output(&pod))
			if m == nil {
				return false, "no data line yet", nil
			}
			if m[1] != m[2] {
				return false, "", fmt.Errorf(
					"pod %s on %s reads data %s, stored %s",
					name,
					pod.Spec.NodeName,
					m[1],
					m[2],
				)
			}
			sum = m[1]
			return true, "", nil
		},
	)
	return pod.Spec.NodeName, sum
}

// TestEvacuate empties a node holding the claims of a 3-replica StatefulSet with `kubectl lvms
// evacuate --stop-workload --yes`: every replica runs on the other node with the data it wrote, and
// the evacuated node holds no LV of ours but those the test did not make.
func TestEvacuate(t *testing.T) {
	fullSetOnly(t, mobilityCost)
	e := newEnv(t)
	node := e.nodes()[0]
	other := e.otherNode(node)
	e.mobileStorageClass()
	sts := moveStatefulSet(e.ns, "web", 3, node)
	e.create(sts)
	defer func() { _ = e.c.Delete(context.Background(), sts) }()
	defer e.uncordon(node)
	sums := map[string]string{}
	var oldLVs []string
	for i := range 3 {
		pod := fmt.Sprintf("web-%d", i)
		on, sum := e.replicaData(pod, node)
		sums[pod] = sum
		_, lv := e.volumeOf("data-" + pod)
		oldLVs = append(oldLVs, lv.Status.VolumeID)
		t.Logf("%s runs on %s with data %s (LV %s)", pod, on, sum, lv.Status.VolumeID)
	}
	e.waitNoOtherClaims(node)
	out := kubectl(t, "lvms", "evacuate", node, "--stop-workload", "--yes")
	t.Logf("kubectl lvms evacuate:\n%s", out)
	for i := range 3 {
		pod := fmt.Sprintf("web-%d", i)
		if !strings.Contains(out, fmt.Sprintf("%s/data-%s to node %s", e.ns, pod, other)) {
			t.Errorf("the plan does not move data-%s to %s", pod, other)
		}
		if on, sum := e.replicaData(pod, other); sum != sums[pod] {
			t.Errorf("%s on %s reads data %s, wrote %s", pod, on, sum, sums[pod])
		}
		_, lv := e.volumeOf("data-" + pod)
		if lv.Spec.NodeName != other {
			t.Errorf("claim data-%s on %s", pod, lv.Spec.NodeName)
		}
	}
	e.lvsMatchLogicalVolumes(node)
	lvs := e.lvs(node)
	for _, id := range oldLVs {
		if attr := lvAttr(lvs, id); attr != "" {
			t.Errorf("the StatefulSet's old LV %s is still on %s (%s)", id, node, attr)
		}
	}
}

// uncordon marks node schedulable.
func (e *env) uncordon(node string) {
	n := &corev1.Node{}
	ctx := context.Background()
	if err := e.c.Get(ctx, client.ObjectKey{Name: node}, n); err != nil || !n.Spec.Unschedulable {
		return
	}
	base := n.DeepCopy()
	n.Spec.Unschedulable = false
	if err := e.c.Patch(ctx, n, client.MergeFrom(base)); err != nil {
		e.t.Errorf("uncordon %s: %v", node, err)
	}
}

// waitNoOtherClaims waits until no claim of another namespace (the tests before) has its volume on
// node: an evacuation moves every claim of the node.
func (e *env) waitNoOtherClaims(node string) {
	e.t.Helper()
	e.waitFor("no other namespace's claim on "+node, func(ctx context.Context) (bool, string, error) {
		var pvs corev1.PersistentVolumeList
		if err := e.c.List(ctx, &pvs); err != nil {
			return false, "", err
		}
		var others []string
		for _, pv := range pvs.Items {
			a := pv.Spec.NodeAffinity
			if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Namespace == e.ns || a == nil || a.Required == nil ||
				!strings.Contains(fmt.Sprint(a.Required.NodeSelectorTerms), node) {
				continue
			}
			others = append(others, pv.Spec.ClaimRef.Namespace+"/"+pv.Spec.ClaimRef.Name)
		}
		return len(others) == 0, fmt.Sprintf("claims %v", others), nil
	})
}
