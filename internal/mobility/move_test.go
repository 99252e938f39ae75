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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/mobility/mobilitytest"
)

func runMove(t *testing.T, c client.Client, opts MoveOptions) (string, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	mobilitytest.Simulate(ctx, c, &wg)
	defer func() { cancel(); wg.Wait() }()
	opts.Namespace, opts.Claim, opts.PollInterval, opts.Timeout = "prod", "data-db-0", 5*time.Millisecond, 10*time.Second
	if opts.To == "" {
		opts.To = "node-b"
	}
	var out bytes.Buffer
	err := RunMove(ctx, c, opts, &out)
	return out.String(), err
}

// TestMove: the claim's pod is deleted with the node cordoned, the volume copied to node-b through an
// image, the claim created again bound to a new PV on node-b with its labels, annotations and owner,
// the new PV gets the old one's reclaim policy, the old PV is deleted and the node uncordoned.
func TestMove(t *testing.T) {
	c := mobilitytest.Client(t, mobilitytest.World()...)
	out, err := runMove(t, c, MoveOptions{Yes: true, StopWorkload: true})
	if err != nil {
		t.Fatalf("move: %v\n%s", err, out)
	}
	t.Log(out)
	claim := &corev1.PersistentVolumeClaim{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "prod", Name: "data-db-0"}, claim); err != nil {
		t.Fatal(err)
	}
	newPV := &corev1.PersistentVolume{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: claim.Spec.VolumeName}, newPV); err != nil {
		t.Fatalf("the claim's PV %q: %v", claim.Spec.VolumeName, err)
	}
	if claim.Labels["app"] != "db" || claim.Annotations["team"] != "storage" || len(claim.OwnerReferences) != 1 ||
		claim.Annotations["pv.kubernetes.io/bind-completed"] != "" || claim.Annotations["volume.kubernetes.io/selected-node"] != "" {
		t.Errorf("claim metadata %+v", claim.ObjectMeta)
	}
	term := newPV.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0]
	if newPV.Spec.CSI.VolumeHandle != "new-"+newPV.Name || term.Key != driver.TopologyNodeKey ||
		term.Values[0] != "node-b" ||
		newPV.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		newPV.Spec.ClaimRef.Name != "data-db-0" ||
		newPV.Annotations[moveFromAnnotation] != "" ||
		newPV.Annotations[provisionedByAnnotation] != driver.Name {
		t.Errorf("new PV %+v", newPV)
	}
	lv := &topolvmv1.LogicalVolume{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: newPV.Name}, lv); err != nil {
		t.Fatal(err)
	}
	if lv.Spec.NodeName != "node-b" || lv.Spec.SourceNode != "node-a" || lv.Spec.Source != "old-lv" ||
		lv.Annotations[driver.AnnotationCopyImage] != "true" {
		t.Errorf("new LogicalVolume %+v", lv)
	}
	for _, gone := range []client.Object{&corev1.PersistentVolume{}, &corev1.Pod{}} {
		key := client.ObjectKey{Name: "pv-old"}
		if _, ok := gone.(*corev1.Pod); ok {
			key = client.ObjectKey{Namespace: "prod", Name: "db-0"}
		}
		if err := c.Get(t.Context(), key, gone); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s left: %v", gone, key, err)
		}
	}
	node := &corev1.Node{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: "node-a"}, node); err != nil || node.Spec.Unschedulable {
		t.Errorf("node-a unschedulable %t, %v", node.Spec.Unschedulable, err)
	}
	for _, want := range []string{"Cordoned node node-a", "copy: Complete", "Uncordoned node node-a", "Moved claim"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestMoveRefusals: a move that cannot or may not run is refused before anything changes.
func TestMoveRefusals(t *testing.T) {
	for _, tt := range []struct {
		name   string
		opts   MoveOptions
		change func([]client.Object)
		want   string
	}{
		{"a pod uses the claim", MoveOptions{Yes: true}, nil, "--stop-workload"},
		{"not confirmed", MoveOptions{StopWorkload: true, In: strings.NewReader("n\n")}, nil, "not confirmed"},
		{"no answer", MoveOptions{StopWorkload: true, In: strings.NewReader("")}, nil, "not confirmed"},
		{"the same node", MoveOptions{Yes: true, StopWorkload: true, To: "node-a"}, nil, "on node node-a already"},
		{"an unknown node", MoveOptions{Yes: true, StopWorkload: true, To: "node-x"}, nil, "target node node-x"},
		{"a node without the class", MoveOptions{Yes: true, StopWorkload: true}, func(objs []client.Object) {
			objs[1].SetAnnotations(nil)
		}, "has no device class thin"},
		{"a node without room", MoveOptions{Yes: true, StopWorkload: true}, func(objs []client.Object) {
			objs[1].SetAnnotations(map[string]string{driver.CapacityAnnotation("thin"): "1048576"})
		}, "1048576 bytes free"},
		{"an unbound claim", MoveOptions{Yes: true, StopWorkload: true}, func(objs []client.Object) {
			objs[2].(*corev1.PersistentVolumeClaim).Status.Phase = corev1.ClaimPending
		}, "not Bound"},
		{"another driver's volume", MoveOptions{Yes: true, StopWorkload: true}, func(objs []client.Object) {
			objs[3].(*corev1.PersistentVolume).Spec.CSI.Driver = "nfs.csi.k8s.io"
		}, "not a topolvm.io volume"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs := mobilitytest.World()
			if tt.change != nil {
				tt.change(objs)
			}
			c := mobilitytest.Client(t, objs...)
			out, err := runMove(t, c, tt.opts)
			if !errors.Is(err, ErrMoveRefused) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want a refusal with %q\n%s", err, tt.want, out)
			}
			pv := &corev1.PersistentVolume{}
			if err := c.Get(t.Context(), client.ObjectKey{Name: "pv-old"}, pv); err != nil ||
				pv.Annotations[moveToAnnotation] != "" || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
				t.Errorf("the old PV changed: %+v, %v", pv, err)
			}
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: "prod", Name: "db-0"}, &corev1.Pod{}); err != nil {
				t.Errorf("the pod: %v", err)
			}
		})
	}
}

// TestMoveResumes: a move interrupted after it deleted the claim (the old PV records it) finishes
// when run again: the claim is created again from the record, bound to the new PV.
func TestMoveResumes(t *testing.T) {
	objs := mobilitytest.World()
	c := mobilitytest.Client(t, objs[0], objs[1], objs[3], objs[4])
	m := &mover{
		c:    c,
		s:    &moveState{claim: objs[2].(*corev1.PersistentVolumeClaim), oldPV: objs[3].(*corev1.PersistentVolume)},
		opts: MoveOptions{Namespace: "prod"},
	}
	m.s.to = "node-b"
	if err := m.record(t.Context()); err != nil {
		t.Fatal(err)
	}
	out, err := runMove(t, c, MoveOptions{Yes: true})
	if err != nil {
		t.Fatalf("resumed move: %v\n%s", err, out)
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "prod", Name: "data-db-0"}, claim); err != nil ||
		!strings.HasPrefix(claim.Spec.VolumeName, "lvms-move-") || claim.Labels["app"] != "db" {
		t.Fatalf("claim %+v, %v", claim, err)
	}
	if !strings.Contains(out, "resuming") {
		t.Errorf("output does not say it resumes:\n%s", out)
	}
	out, err = runMove(t, c, MoveOptions{Yes: true})
	if !errors.Is(err, ErrMoveRefused) || !strings.Contains(err.Error(), "already") {
		t.Errorf("a second run: %v\n%s", err, out)
	}
}

// TestSimulatorKnowsTheAnnotation: the simulator deletes a moved PV by the annotation move records.
func TestSimulatorKnowsTheAnnotation(t *testing.T) {
	if mobilitytest.MoveToAnnotation != moveToAnnotation {
		t.Fatalf("mobilitytest.MoveToAnnotation %q, move records %q", mobilitytest.MoveToAnnotation, moveToAnnotation)
	}
}

// TestLogicalVolumeOf: the LogicalVolume named after the PV is used when its volume ID is the PV's
// handle; otherwise the one with that volume ID is found among all.
func TestLogicalVolumeOf(t *testing.T) {
	pv := &corev1.PersistentVolume{}
	pv.Name = "pv-old"
	pv.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: driver.Name, VolumeHandle: "old-lv"}
	lv := func(name, id string) *topolvmv1.LogicalVolume {
		l := &topolvmv1.LogicalVolume{Status: topolvmv1.LogicalVolumeStatus{VolumeID: id}}
		l.Name = name
		return l
	}
	for _, tc := range []struct {
		name string
		lvs  []client.Object
		want string // name of the LogicalVolume found; "" for none
	}{
		{"named after the PV", []client.Object{lv("other", "x"), lv("pv-old", "old-lv")}, "pv-old"},
		{"named otherwise", []client.Object{lv("a", "x"), lv("b", "old-lv")}, "b"},
		{"the named one has another ID", []client.Object{lv("pv-old", "x"), lv("b", "old-lv")}, "b"},
		{"none", []client.Object{lv("pv-old", "x")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := logicalVolumeOf(t.Context(), mobilitytest.Client(t, tc.lvs...), pv)
			switch {
			case tc.want == "" && !errors.Is(err, ErrMoveRefused):
				t.Errorf("got %v, %v; want ErrMoveRefused", got, err)
			case tc.want != "" && (err != nil || got.Name != tc.want):
				t.Errorf("got %v, %v; want %s", got, err, tc.want)
			}
		})
	}
}
