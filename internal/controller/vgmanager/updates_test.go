package vgmanager_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
)

func TestVolumeGroupUpdateMatters(t *testing.T) {
	const node = "node-a"
	base := func() *lvmv1alpha1.LVMVolumeGroup {
		return &lvmv1alpha1.LVMVolumeGroup{ObjectMeta: metav1.ObjectMeta{
			Name: "vg1", Generation: 3, Finalizers: []string{vgmanager.Finalizer("node-b")},
			Annotations: map[string]string{vgmanager.WipedAnnotation("node-b"): "t"},
		}}
	}
	now := metav1.Now()
	cases := []struct {
		name   string
		change func(*lvmv1alpha1.LVMVolumeGroup)
		want   bool
	}{
		{"nothing", func(*lvmv1alpha1.LVMVolumeGroup) {}, false},
		{"another node's finalizer added", func(v *lvmv1alpha1.LVMVolumeGroup) {
			v.Finalizers = append(v.Finalizers, vgmanager.Finalizer("node-c"))
		}, false},
		{"another node's wiped annotation", func(v *lvmv1alpha1.LVMVolumeGroup) {
			v.Annotations[vgmanager.WipedAnnotation("node-c")] = "t"
		}, false},
		{"status conditions", func(v *lvmv1alpha1.LVMVolumeGroup) {
			v.Status.Conditions = []metav1.Condition{{Type: "VolumeGroupsReady", Status: metav1.ConditionTrue}}
		}, false},
		{"spec (generation)", func(v *lvmv1alpha1.LVMVolumeGroup) { v.Generation++ }, true},
		{"deletion", func(v *lvmv1alpha1.LVMVolumeGroup) { v.DeletionTimestamp = &now }, true},
		{"this node's finalizer added", func(v *lvmv1alpha1.LVMVolumeGroup) {
			v.Finalizers = append(v.Finalizers, vgmanager.Finalizer(node))
		}, true},
		{"this node's wiped annotation", func(v *lvmv1alpha1.LVMVolumeGroup) {
			v.Annotations[vgmanager.WipedAnnotation(node)] = "t"
		}, true},
		{"dry-run annotation", func(v *lvmv1alpha1.LVMVolumeGroup) {
			v.Annotations[vgmanager.DryRunAnnotation] = "true"
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, updated := base(), base()
			tc.change(updated)
			if got := vgmanager.VolumeGroupUpdateMatters(node, old, updated); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// countingClient counts the server-side applies it passes on.
type countingClient struct {
	client.Client
	applies int
}

func (c *countingClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	c.applies++
	return c.Client.Apply(ctx, obj, opts...)
}

// A reconcile that finds the node's entry as it would write it writes nothing: each volume group is
// reconciled once a minute on every node.
func TestReconcileWritesAnUnchangedStatusOnce(t *testing.T) {
	n := newNode([]string{"/dev/sdb"}, nil)
	e := newEnv(t, n, newCluster(nil),
		newVG("vg1", spec(thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyDynamic)), ownedBy(newCluster(nil))))
	counting := &countingClient{Client: e.client}
	e.r = vgmanager.New(vgmanager.Options{
		Client: counting, Recorder: e.recorder, Disks: n.disks, LVM: n.lvm, Sink: e.sink,
		NodeName: nodeName, Namespace: ns, ResolvePath: n.resolve,
	})
	e.reconcile("vg1")
	built := counting.applies
	if built == 0 || e.entries()["vg1"].Status != lvmv1alpha1.VGStatusReady {
		t.Fatalf("building the VG applied %d times, entry %+v", built, e.entries()["vg1"])
	}
	e.reconcile("vg1")
	e.reconcile("vg1")
	if got := counting.applies - built; got != 0 {
		t.Errorf("two reconciles that changed nothing applied the status %d times, want 0", got)
	}
	// A change (a new disk grows the VG) is written.
	n.disk("/dev/sdc", 2*gib)
	e.reconcile("vg1")
	if counting.applies == built || len(e.entries()["vg1"].Devices) != 2 {
		t.Errorf("growing the VG applied %d times, entry %+v", counting.applies-built, e.entries()["vg1"])
	}
}
