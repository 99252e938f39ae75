package lvmcluster_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
)

func sampleCluster(name string) *lvmv1alpha1.LVMCluster {
	return &lvmv1alpha1.LVMCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: operatorNamespace},
		Spec: lvmv1alpha1.LVMClusterSpec{Storage: lvmv1alpha1.Storage{DeviceClasses: []lvmv1alpha1.DeviceClass{{
			Name: "vg1", Default: true, FilesystemType: lvmv1alpha1.FilesystemTypeXFS,
			ThinPoolConfig: &lvmv1alpha1.ThinPoolConfig{Name: "thin-pool-1", SizePercent: 90, OverprovisionRatio: 10},
			// With several device classes each must list its disks (upstream LVMS's rule), and paths
			// cannot be added later, so vg1 lists its disk from the start for testDeviceClassRemoval.
			DeviceSelector: &lvmv1alpha1.DeviceSelector{Paths: []lvmv1alpha1.DevicePath{"/dev/sdb"}},
		}}}},
	}
}

// TestLVMClusterLifecycle walks one LVMCluster through its life, in order: operands appear, status
// follows the node reports, drift is repaired, a second LVMCluster is refused, a removed device class
// takes its operands along, and deletion waits for PVCs before tearing everything down.
func TestLVMClusterLifecycle(t *testing.T) {
	c := sampleCluster("my-lvmcluster")
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatalf("create sample: %v", err)
	}
	t.Run("operands", func(t *testing.T) { testOperands(t) })
	t.Run("status follows node reports", func(t *testing.T) { testStatus(t, c) })
	t.Run("drift is repaired", func(t *testing.T) { testDrift(t) })
	t.Run("second LVMCluster rejected", func(t *testing.T) { testSecondRejected(t) })
	t.Run("LVMCluster outside the operator namespace rejected", func(t *testing.T) { testWrongNamespace(t) })
	t.Run("device class removal", func(t *testing.T) { testDeviceClassRemoval(t, c) })
	t.Run("deletion waits for PVCs", func(t *testing.T) { testDeletion(t, c) })
}

func testOperands(t *testing.T) {
	eventually(t, "StorageClass lvms-vg1", func(ctx context.Context) error {
		var sc storagev1.StorageClass
		if err := k8s.Get(ctx, client.ObjectKey{Name: "lvms-vg1"}, &sc); err != nil {
			return err
		}
		want := map[string]string{"topolvm.io/device-class": "vg1", "csi.storage.k8s.io/fstype": "xfs"}
		switch {
		case sc.Provisioner != "topolvm.io":
			return fmt.Errorf("provisioner %q", sc.Provisioner)
		case !maps.Equal(sc.Parameters, want):
			return fmt.Errorf("parameters %v", sc.Parameters)
		case sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer:
			return fmt.Errorf("binding mode %v", sc.VolumeBindingMode)
		case sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion:
			return errors.New("expansion not allowed")
		case sc.ReclaimPolicy == nil || *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete:
			return fmt.Errorf("reclaim policy %v", sc.ReclaimPolicy)
		case sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true":
			return errors.New("not marked default although no other default StorageClass exists")
		}
		return nil
	})
	eventually(t, "VolumeSnapshotClass lvms-vg1", func(ctx context.Context) error {
		return checkSnapshotClass(ctx, "lvms-vg1", "vg1")
	})
	eventually(t, "the node agent policy, before the node agents", func(ctx context.Context) error {
		var policy admissionv1.ValidatingAdmissionPolicy
		if err := k8s.Get(ctx, client.ObjectKey{Name: lvmcluster.NodeAgentPolicyName}, &policy); err != nil {
			return err
		}
		if len(policy.Spec.MatchConditions) != 1 ||
			!strings.Contains(
				policy.Spec.MatchConditions[0].Expression,
				"system:serviceaccount:lvms-system:lvms-node'",
			) {
			return fmt.Errorf("match conditions %+v", policy.Spec.MatchConditions)
		}
		var binding admissionv1.ValidatingAdmissionPolicyBinding
		if err := k8s.Get(ctx, client.ObjectKey{Name: lvmcluster.NodeAgentPolicyName}, &binding); err != nil {
			return err
		}
		var c lvmv1alpha1.LVMCluster
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "my-lvmcluster"}, &c); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(c.Status.Conditions, lvmcluster.ConditionNodeAgentPolicy) {
			return fmt.Errorf("conditions %+v", c.Status.Conditions)
		}
		return nil
	})
	eventually(t, "CSIDriver topolvm.io", func(ctx context.Context) error {
		var d storagev1.CSIDriver
		if err := k8s.Get(ctx, client.ObjectKey{Name: "topolvm.io"}, &d); err != nil {
			return err
		}
		if ptr.Deref(d.Spec.AttachRequired, true) || !ptr.Deref(d.Spec.PodInfoOnMount, false) ||
			!ptr.Deref(d.Spec.StorageCapacity, false) {
			return fmt.Errorf("unexpected CSIDriver spec %+v", d.Spec)
		}
		return nil
	})
	eventually(t, "LVMVolumeGroup vg1", func(ctx context.Context) error {
		var vg lvmv1alpha1.LVMVolumeGroup
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "vg1"}, &vg); err != nil {
			return err
		}
		if vg.Spec.ThinPoolConfig == nil || vg.Spec.ThinPoolConfig.Name != "thin-pool-1" || !vg.Spec.Default {
			return fmt.Errorf("unexpected spec %+v", vg.Spec)
		}
		if len(vg.OwnerReferences) != 1 || vg.OwnerReferences[0].Name != "my-lvmcluster" {
			return fmt.Errorf("owner references %v", vg.OwnerReferences)
		}
		return nil
	})
	eventually(t, "node DaemonSet", func(ctx context.Context) error {
		var ds appsv1.DaemonSet
		if err := k8s.Get(
			ctx,
			client.ObjectKey{Namespace: operatorNamespace, Name: lvmcluster.NodeDaemonSetName},
			&ds,
		); err != nil {
			return err
		}
		pod := ds.Spec.Template.Spec
		if !pod.HostPID || pod.Containers[0].Image != "example.com/lvms:test" ||
			!ptr.Deref(pod.Containers[0].SecurityContext.Privileged, false) {
			return fmt.Errorf("unexpected pod spec %+v", pod)
		}
		return nil
	})
}

func nodeObj(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
	}
}

func report(ctx context.Context, node string, st lvmv1alpha1.VGStatusType, reason string) error {
	ns := &lvmv1alpha1.LVMVolumeGroupNodeStatus{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: operatorNamespace}}
	_, err := controllerutilCreateOrUpdate(ctx, ns, func() {
		ns.Spec.LiveNodeStatus = []lvmv1alpha1.VGStatus{
			{Name: "vg1", Status: st, Reason: reason, Devices: []string{"/dev/sdb"}},
		}
	})
	return err
}

func expectState(t *testing.T, c *lvmv1alpha1.LVMCluster, want lvmv1alpha1.LVMStateType, msgFragment string) {
	t.Helper()
	eventually(t, "state "+string(want), func(ctx context.Context) error {
		var got lvmv1alpha1.LVMCluster
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), &got); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, lvmv1alpha1.ConditionVolumeGroupsReady)
		if got.Status.State != want || cond == nil || !strings.Contains(cond.Message, msgFragment) {
			return fmt.Errorf("state %q, condition %+v", got.Status.State, cond)
		}
		if got.Status.Ready != (want == lvmv1alpha1.LVMStatusReady) {
			return fmt.Errorf("ready=%v with state %s", got.Status.Ready, want)
		}
		if cond.ObservedGeneration != got.Generation {
			return fmt.Errorf(
				"condition observed generation %d, object generation %d",
				cond.ObservedGeneration,
				got.Generation,
			)
		}
		return nil
	})
}

func testStatus(t *testing.T, c *lvmv1alpha1.LVMCluster) {
	ctx := context.Background()
	expectState(t, c, lvmv1alpha1.LVMStatusProgressing, "no schedulable node")
	for _, n := range []string{"node-a", "node-b"} {
		node := nodeObj(n)
		if err := k8s.Create(ctx, node); err != nil {
			t.Fatalf("create node: %v", err)
		}
		// The apiserver taints new nodes not-ready (TaintNodesByCondition) and the node agent does not
		// tolerate that, so such nodes do not count (unit-tested in status_test.go). Play the node
		// lifecycle controller for a node that became Ready.
		node.Spec.Taints = nil
		if err := k8s.Update(ctx, node); err != nil {
			t.Fatalf("untaint node: %v", err)
		}
	}
	steps := []struct {
		node, reason string
		status       lvmv1alpha1.VGStatusType
		want         lvmv1alpha1.LVMStateType
		msg          string
	}{
		{
			"node-a",
			"",
			lvmv1alpha1.VGStatusReady,
			lvmv1alpha1.LVMStatusProgressing,
			"node node-b, device class vg1: Progressing",
		},
		{"node-b", "", lvmv1alpha1.VGStatusReady, lvmv1alpha1.LVMStatusReady, "2 volume group(s) Ready"},
		{
			"node-b",
			"thin pool 95% full",
			lvmv1alpha1.VGStatusDegraded,
			lvmv1alpha1.LVMStatusDegraded,
			"node node-b, device class vg1: Degraded: thin pool 95% full",
		},
		{
			"node-a",
			"disk /dev/sdb missing",
			lvmv1alpha1.VGStatusFailed,
			lvmv1alpha1.LVMStatusFailed,
			"node node-a, device class vg1: Failed: disk /dev/sdb missing",
		},
		{"node-a", "", lvmv1alpha1.VGStatusReady, lvmv1alpha1.LVMStatusDegraded, "node-b"},
		{"node-b", "", lvmv1alpha1.VGStatusReady, lvmv1alpha1.LVMStatusReady, "Ready"},
	}
	for _, s := range steps {
		if err := report(ctx, s.node, s.status, s.reason); err != nil {
			t.Fatalf("report: %v", err)
		}
		expectState(t, c, s.want, s.msg)
		expectColumns(t, s.node, s.status, s.reason, s.want, s.msg)
	}
	// A cordoned node no longer counts.
	var b corev1.Node
	if err := k8s.Get(ctx, client.ObjectKey{Name: "node-b"}, &b); err != nil {
		t.Fatal(err)
	}
	_ = report(ctx, "node-b", lvmv1alpha1.VGStatusFailed, "broken")
	expectState(t, c, lvmv1alpha1.LVMStatusFailed, "broken")
	b.Spec.Unschedulable = true
	if err := k8s.Update(ctx, &b); err != nil {
		t.Fatal(err)
	}
	expectState(t, c, lvmv1alpha1.LVMStatusReady, "1 volume group(s) Ready")
}

func testDrift(t *testing.T) {
	ctx := context.Background()
	// Someone replaces the StorageClass with other parameters (they are immutable in place).
	// The controller may recreate the StorageClass between the delete and the create: delete
	// again until the tampered one is in place.
	eventually(t, "replace StorageClass", func(ctx context.Context) error {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "lvms-vg1"}}
		if err := k8s.Delete(ctx, sc); client.IgnoreNotFound(err) != nil {
			return err
		}
		tampered := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "lvms-vg1"}, Provisioner: "topolvm.io",
			Parameters: map[string]string{"topolvm.io/device-class": "other", "csi.storage.k8s.io/fstype": "ext4"}}
		return k8s.Create(ctx, tampered)
	})
	eventually(t, "StorageClass parameters repaired", func(ctx context.Context) error {
		var got storagev1.StorageClass
		if err := k8s.Get(ctx, client.ObjectKey{Name: "lvms-vg1"}, &got); err != nil {
			return err
		}
		if got.Parameters["topolvm.io/device-class"] != "vg1" || got.Parameters["csi.storage.k8s.io/fstype"] != "xfs" {
			return fmt.Errorf("parameters still %v", got.Parameters)
		}
		return nil
	})
	// Someone deletes the node DaemonSet.
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: lvmcluster.NodeDaemonSetName},
	}
	var before appsv1.DaemonSet
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(ds), &before); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, ds); err != nil {
		t.Fatalf("delete DaemonSet: %v", err)
	}
	eventually(t, "DaemonSet recreated", func(ctx context.Context) error {
		var got appsv1.DaemonSet
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ds), &got); err != nil {
			return err
		}
		if got.UID == before.UID {
			return errors.New("still the old DaemonSet")
		}
		return nil
	})
	testPolicyDrift(t)
}

// testPolicyDrift deletes the node agent policy and its binding, as `helm upgrade` from a chart
// that carried them does: the operator writes them again (policywatch.go), not at its next reconcile.
func testPolicyDrift(t *testing.T) {
	ctx := context.Background()
	// The repairs above reconcile for a while; a reconcile then would write the policy again
	// without the watch. Wait until the LVMCluster has not changed for 3 s.
	var last string
	quietSince := time.Now()
	eventually(t, "the LVMCluster quiet for 3 s", func(ctx context.Context) error {
		var c lvmv1alpha1.LVMCluster
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "my-lvmcluster"}, &c); err != nil {
			return err
		}
		if c.ResourceVersion != last {
			last, quietSince = c.ResourceVersion, time.Now()
		}
		if time.Since(quietSince) < 3*time.Second {
			return errors.New("changed in the last 3 s")
		}
		return nil
	})
	for _, obj := range []client.Object{
		&admissionv1.ValidatingAdmissionPolicy{}, &admissionv1.ValidatingAdmissionPolicyBinding{},
	} {
		key := client.ObjectKey{Name: lvmcluster.NodeAgentPolicyName}
		if err := k8s.Get(ctx, key, obj); err != nil {
			t.Fatal(err)
		}
		old := obj.GetUID()
		if err := k8s.Delete(ctx, obj); err != nil {
			t.Fatalf("delete %T: %v", obj, err)
		}
		eventually(t, fmt.Sprintf("%T written again", obj), func(ctx context.Context) error {
			if err := k8s.Get(ctx, key, obj); err != nil {
				return err
			}
			if obj.GetUID() == old {
				return errors.New("still the deleted one")
			}
			return nil
		})
	}
}

func testSecondRejected(t *testing.T) {
	err := k8s.Create(context.Background(), sampleCluster("another"))
	if err == nil || !strings.Contains(err.Error(), "only one LVMCluster is supported") ||
		!strings.Contains(err.Error(), "my-lvmcluster already exists") {
		t.Fatalf("second LVMCluster: got %v, want a rejection naming the existing one", err)
	}
	t.Logf("rejected: %v", err)
}

func testWrongNamespace(t *testing.T) {
	ctx := context.Background()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}); err != nil {
		t.Fatal(err)
	}
	c := sampleCluster("stray")
	c.Namespace = "elsewhere"
	err := k8s.Create(ctx, c)
	if err == nil || !strings.Contains(err.Error(), `create it in the operator namespace "lvms-system"`) {
		t.Fatalf("got %v, want a rejection naming the operator namespace", err)
	}
}

// checkSnapshotClass fails unless VolumeSnapshotClass name exists for device class dc.
func checkSnapshotClass(ctx context.Context, name, dc string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(lvmcluster.SnapshotClassGVK)
	if err := k8s.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
		return err
	}
	params, _, _ := unstructured.NestedStringMap(u.Object, "parameters")
	if u.Object["driver"] != "topolvm.io" || u.Object["deletionPolicy"] != "Delete" ||
		!maps.Equal(params, map[string]string{"topolvm.io/device-class": dc}) {
		return fmt.Errorf("unexpected VolumeSnapshotClass %v", u.Object)
	}
	return nil
}

func testDeviceClassRemoval(t *testing.T, c *lvmv1alpha1.LVMCluster) {
	ctx := context.Background()
	update := func(mutate func(*lvmv1alpha1.LVMCluster)) {
		eventually(t, "update LVMCluster", func(ctx context.Context) error {
			var cur lvmv1alpha1.LVMCluster
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), &cur); err != nil {
				return err
			}
			mutate(&cur)
			return k8s.Update(ctx, &cur)
		})
	}
	update(func(cur *lvmv1alpha1.LVMCluster) {
		cur.Spec.Storage.DeviceClasses = append(
			cur.Spec.Storage.DeviceClasses,
			lvmv1alpha1.DeviceClass{Name: "vg2", FilesystemType: lvmv1alpha1.FilesystemTypeExt4,
				DeviceSelector: &lvmv1alpha1.DeviceSelector{Paths: []lvmv1alpha1.DevicePath{"/dev/sdc"}}},
		)
	})
	eventually(t, "lvms-vg2 appears", func(ctx context.Context) error {
		return k8s.Get(ctx, client.ObjectKey{Name: "lvms-vg2"}, &storagev1.StorageClass{})
	})
	// vg2 is thick: it gets a VolumeSnapshotClass like a thin class (copy-on-write snapshots).
	eventually(t, "VolumeSnapshotClass lvms-vg2 of the thick class", func(ctx context.Context) error {
		return checkSnapshotClass(ctx, "lvms-vg2", "vg2")
	})
	// A user copies our classes (as the storage e2e suite does): the copies carry our labels and
	// stamp, and are theirs. "fast" is a copy of lvms-vg1 without our prefix.
	copyStorageClass(t, "lvms-vg1", "fast")
	copyStorageClass(t, "lvms-vg2", "lvms-vg2-copy")
	copySnapshotClass(t, "lvms-vg2", "lvms-vg2-copy")
	update(func(cur *lvmv1alpha1.LVMCluster) { cur.Spec.Storage.DeviceClasses = cur.Spec.Storage.DeviceClasses[:1] })
	eventually(t, "lvms-vg2 and LVMVolumeGroup vg2 removed", func(ctx context.Context) error {
		if err := k8s.Get(
			ctx,
			client.ObjectKey{Name: "lvms-vg2"},
			&storagev1.StorageClass{},
		); !apierrors.IsNotFound(
			err,
		) {
			return fmt.Errorf("StorageClass lvms-vg2: %w", err)
		}
		vsc := &unstructured.Unstructured{}
		vsc.SetGroupVersionKind(lvmcluster.SnapshotClassGVK)
		if err := k8s.Get(ctx, client.ObjectKey{Name: "lvms-vg2"}, vsc); !apierrors.IsNotFound(err) {
			return fmt.Errorf("VolumeSnapshotClass lvms-vg2: %w", err)
		}
		err := k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "vg2"}, &lvmv1alpha1.LVMVolumeGroup{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("LVMVolumeGroup vg2: %w", err)
		}
		return nil
	})
	// The pass that deleted lvms-vg2 listed the copies beside it, and left them.
	if err := expectCopies(ctx, copiedStorageClasses, copiedSnapshotClasses); err != nil {
		t.Fatal(err)
	}
}

// The copies testDeviceClassRemoval makes; testDeletion proves they outlive the LVMCluster.
var (
	copiedStorageClasses  = []string{"fast", "lvms-vg2-copy"}
	copiedSnapshotClasses = []string{"lvms-vg2-copy"}
)

// controllerutilCreateOrUpdate creates obj or updates it with mutate applied (test helper for
// playing a node agent).
func controllerutilCreateOrUpdate(
	ctx context.Context,
	obj *lvmv1alpha1.LVMVolumeGroupNodeStatus,
	mutate func(),
) (bool, error) {
	err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		mutate()
		return true, k8s.Create(ctx, obj)
	}
	if err != nil {
		return false, err
	}
	mutate()
	return false, k8s.Update(ctx, obj)
}
