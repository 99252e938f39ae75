package envtest

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/dev/internal/simnode"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// TestSimulatedNodes: a simulated node of the scale benchmark does towards the API server what a
// node agent and its kubelet do: the Node, its CSINode once the capacity is published, a Ready
// status entry per volume group (its claim; no finalizer on the shared LVMVolumeGroup), the
// capacity annotations, and a LogicalVolume's LV created and removed.
func TestSimulatedNodes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{Scheme: k8s.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := simnode.New(mgr, simnode.Options{Namespace: testNamespace, ClusterID: "sim",
		Disks: []simnode.Disk{{Path: "/dev/ubda", Size: resource.MustParse("100Gi")}}})
	if err != nil {
		t.Fatal(err)
	}
	vg := &lvmv1alpha1.LVMVolumeGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "simthin"},
		Spec: lvmv1alpha1.LVMVolumeGroupSpec{
			DeviceSelector: &lvmv1alpha1.DeviceSelector{Paths: []lvmv1alpha1.DevicePath{"/dev/ubda"}},
			ThinPoolConfig: &lvmv1alpha1.ThinPoolConfig{Name: "pool", SizePercent: 90, OverprovisionRatio: 10},
		},
	}
	if err := k8s.Create(ctx, vg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeSimVG(t, vg) })
	go func() { _ = mgr.Start(ctx) }()
	const node = "sim-envtest-0"
	if err := fleet.AddNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
		_ = k8s.Delete(context.Background(), &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node}})
	})

	// The simulated kubelet writes the CSINode when the agent registers: once the Node carries the
	// capacity of the node's device class (read in that order, the annotation must be there).
	eventually(t, "the CSINode, after the capacity annotation", func() string {
		var csiNode storagev1.CSINode
		if err := k8s.Get(ctx, client.ObjectKey{Name: node}, &csiNode); err != nil {
			return err.Error()
		}
		if len(csiNode.Spec.Drivers) != 1 || csiNode.Spec.Drivers[0].Name != driver.Name {
			t.Fatalf("CSINode %s: %+v", node, csiNode.Spec)
		}
		var n corev1.Node
		if err := k8s.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return err.Error()
		}
		if _, ok := n.Annotations[driver.CapacityAnnotationPrefix+"simthin"]; !ok {
			t.Fatalf("the CSINode exists before the capacity annotation: %v", n.Annotations)
		}
		return ""
	})
	eventually(t, "a Ready status entry, the finalizer and the capacity annotation", func() string {
		var st lvmv1alpha1.LVMVolumeGroupNodeStatus
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: node}, &st); err != nil {
			return err.Error()
		}
		if len(st.Spec.LiveNodeStatus) != 1 || st.Spec.LiveNodeStatus[0].Status != lvmv1alpha1.VGStatusReady {
			return "status " + toJSON(st.Spec)
		}
		var got lvmv1alpha1.LVMVolumeGroup
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(vg), &got); err != nil {
			return err.Error()
		}
		if len(got.Finalizers) != 0 { // the node's claim is its status entry, not a finalizer
			t.Fatalf("finalizers %s on the shared LVMVolumeGroup", toJSON(got.Finalizers))
		}
		var n corev1.Node
		if err := k8s.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return err.Error()
		}
		free, err := strconv.ParseUint(n.Annotations[driver.CapacityAnnotationPrefix+"simthin"], 10, 64)
		if err != nil || free < 500<<30 { // 90 % of 100 GiB, overprovisioned 10 times
			return "annotations " + toJSON(n.Annotations)
		}
		return ""
	})

	lv := &topolvmv1.LogicalVolume{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("simlv")},
		Spec: topolvmv1.LogicalVolumeSpec{Name: "pvc-sim", NodeName: node, Size: resource.MustParse("1Gi"),
			DeviceClass: "simthin"},
	}
	if err := k8s.Create(ctx, lv); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the LV created", func() string {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(lv), lv); err != nil {
			return err.Error()
		}
		if lv.Status.VolumeID == "" || lv.Status.CurrentSize == nil {
			return "status " + toJSON(lv.Status)
		}
		return ""
	})
	if err := k8s.Delete(ctx, lv); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the LogicalVolume gone", func() string {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(lv), lv); client.IgnoreNotFound(err) != nil || err == nil {
			return "still there: " + toJSON(lv.Finalizers)
		}
		return ""
	})
	if c := fleet.Counters(); c.Nodes != 1 || c.VolumeGroupReconciles == 0 || c.LogicalVolumeReconciles == 0 {
		t.Errorf("counters %+v", c)
	}
}

// removeSimVG deletes the test's LVMVolumeGroup, its finalizers and node statuses dropped.
func removeSimVG(t *testing.T, vg *lvmv1alpha1.LVMVolumeGroup) {
	ctx := context.Background()
	var got lvmv1alpha1.LVMVolumeGroup
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(vg), &got); err == nil {
		got.Finalizers = nil
		_ = k8s.Update(ctx, &got)
	}
	_ = k8s.Delete(ctx, vg)
	_ = k8s.DeleteAllOf(ctx, &lvmv1alpha1.LVMVolumeGroupNodeStatus{}, client.InNamespace(testNamespace))
	t.Log("removed the simulated volume group")
}

// eventually polls check (an empty result is success) for up to 60 s.
func eventually(t *testing.T, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		if last = check(); last == "" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: not within 60 s: %s", what, last)
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
