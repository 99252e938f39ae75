package mobility

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/mobility/mobilitytest"
)

// evacuateWorld is moveWorld with a second claim prod/data-db-1 on node-a, a snapshot on node-a, and
// node-c, which has more room than node-b.
func evacuateWorld() []client.Object {
	objs := mobilitytest.World()
	claim := objs[2].DeepCopyObject().(*corev1.PersistentVolumeClaim)
	claim.Name, claim.UID, claim.Spec.VolumeName = "data-db-1", "claim-1", "pv-old-1"
	pv := objs[3].DeepCopyObject().(*corev1.PersistentVolume)
	pv.Name, pv.UID, pv.Spec.CSI.VolumeHandle = "pv-old-1", "pv-1", "old-lv-1"
	pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "prod", Name: "data-db-1", UID: "claim-1"}
	lv := objs[4].DeepCopyObject().(*topolvmv1.LogicalVolume)
	lv.Name, lv.Spec.Name, lv.Status.VolumeID = "pv-old-1", "pv-old-1", "old-lv-1"
	snap := objs[4].DeepCopyObject().(*topolvmv1.LogicalVolume)
	snap.Name, snap.Spec.Name, snap.Spec.AccessType, snap.Status.VolumeID = "snapshot-1", "snapshot-1",
		topolvmv1.AccessTypeReadOnly, "snap-lv"
	for _, p := range []*corev1.PersistentVolume{objs[3].(*corev1.PersistentVolume), pv} {
		p.Status.Phase = corev1.VolumeBound
	}
	nodeC := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-c",
		Annotations: map[string]string{driver.CapacityAnnotation("thin"): "1610612736"}}}
	objs[1].SetAnnotations(map[string]string{driver.CapacityAnnotation("thin"): "1073741824"})
	return append(objs, claim, pv, lv, snap, nodeC)
}

func runEvacuate(t *testing.T, c client.Client, opts EvacuateOptions) (string, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	mobilitytest.Simulate(ctx, c, &wg)
	defer func() { cancel(); wg.Wait() }()
	opts.Node, opts.PollInterval, opts.Timeout = "node-a", 5*time.Millisecond, 10*time.Second
	var out bytes.Buffer
	err := RunEvacuate(ctx, c, opts, &out)
	return out.String(), err
}

// TestEvacuate: one plan for both claims of node-a (the larger free node first, counting what the plan
// sends there), the snapshot listed as staying, node-a cordoned and left so, both claims bound on their
// new nodes.
func TestEvacuate(t *testing.T) {
	c := mobilitytest.Client(t, evacuateWorld()...)
	out, err := runEvacuate(t, c, EvacuateOptions{MoveOptions: MoveOptions{Yes: true, StopWorkload: true}})
	if err != nil {
		t.Fatalf("evacuate: %v\n%s", err, out)
	}
	for _, want := range []string{
		"move 2 claim(s)", "prod/data-db-0 (1024.0 MiB, device class thin) to node node-c",
		"prod/data-db-1 (1024.0 MiB, device class thin) to node node-b", "stays on the node: LogicalVolume snapshot-1 (a snapshot",
		"[2/2] prod/data-db-1 to node node-b", "it stays cordoned",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for claim, node := range map[string]string{"data-db-0": "node-c", "data-db-1": "node-b"} {
		pvc := &corev1.PersistentVolumeClaim{}
		pv := &corev1.PersistentVolume{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: "prod", Name: claim}, pvc); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(t.Context(), client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
			t.Fatal(err)
		}
		if got := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0]; got != node {
			t.Errorf("claim %s on %s, want %s", claim, got, node)
		}
	}
	n := &corev1.Node{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: "node-a"}, n); err != nil || !n.Spec.Unschedulable {
		t.Errorf("node-a schedulable after its evacuation: %v", err)
	}
}

// TestEvacuateRefusals: nowhere to go, or pods without --stop-workload: refused before anything
// changes (the node is not cordoned).
func TestEvacuateRefusals(t *testing.T) {
	for _, tt := range []struct {
		name   string
		opts   EvacuateOptions
		change func([]client.Object)
		want   string
	}{
		{"pods use a claim", EvacuateOptions{MoveOptions: MoveOptions{Yes: true}}, nil, "prod/db-0"},
		{"no room", EvacuateOptions{MoveOptions: MoveOptions{Yes: true, StopWorkload: true}}, func(objs []client.Object) {
			objs[len(objs)-1].SetAnnotations(map[string]string{driver.CapacityAnnotation("thin"): "1048576"})
		}, "fits on no other schedulable node"},
		{"not confirmed", EvacuateOptions{MoveOptions: MoveOptions{StopWorkload: true, In: strings.NewReader("no\n")}},
			nil, "not confirmed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs := evacuateWorld()
			if tt.change != nil {
				tt.change(objs)
			}
			c := mobilitytest.Client(t, objs...)
			out, err := runEvacuate(t, c, tt.opts)
			if !errors.Is(err, ErrMoveRefused) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want a refusal with %q\n%s", err, tt.want, out)
			}
			n := &corev1.Node{}
			if err := c.Get(t.Context(), client.ObjectKey{Name: "node-a"}, n); err != nil || n.Spec.Unschedulable {
				t.Errorf("node-a cordoned by a refused evacuation: %v", err)
			}
		})
	}
}

// TestEvacuateLeavesClaimsBeingDeleted: a claim being deleted is not moved, and the plan says so.
func TestEvacuateLeavesClaimsBeingDeleted(t *testing.T) {
	objs := evacuateWorld()
	claim := objs[len(objs)-5].(*corev1.PersistentVolumeClaim)
	claim.DeletionTimestamp, claim.Finalizers = &metav1.Time{Time: time.Now()}, []string{"kubernetes.io/pvc-protection"}
	c := mobilitytest.Client(t, objs...)
	out, err := runEvacuate(t, c, EvacuateOptions{MoveOptions: MoveOptions{Yes: true, StopWorkload: true}})
	if err != nil {
		t.Fatalf("evacuate: %v\n%s", err, out)
	}
	if !strings.Contains(out, "move 1 claim(s)") || !strings.Contains(out, "claim prod/data-db-1 is being deleted") {
		t.Errorf("output:\n%s", out)
	}
}

// TestEvacuateResumesToAnUnschedulableNode: a move interrupted after it recorded its target keeps
// that target in the plan, also when that node has been cordoned since.
func TestEvacuateResumesToAnUnschedulableNode(t *testing.T) {
	objs := evacuateWorld()
	pv := objs[3].(*corev1.PersistentVolume)
	pv.Annotations[moveToAnnotation] = "node-b"
	objs[1].(*corev1.Node).Spec.Unschedulable = true
	plan, _, err := PlanEvacuation(t.Context(), mobilitytest.Client(t, objs...), "node-a")
	if err != nil || len(plan) != 2 || plan[0].To != "node-b" || plan[1].To != "node-c" {
		t.Fatalf("plan %+v, %v; want data-db-0 resumed to node-b and data-db-1 to node-c", plan, err)
	}
}
