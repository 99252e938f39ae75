package vgmanager_test

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
)

// liveReader is the API server as the reconciler's APIReader sees it: onGet runs before each Get
// (to look at what was done until then), and deleting makes the LVMVolumeGroup read as being
// deleted there before the cache knows.
type liveReader struct {
	client.Reader
	onGet    func()
	deleting bool
}

func (r *liveReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if r.onGet != nil {
		r.onGet()
	}
	if err := r.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if vg, ok := obj.(*lvmv1alpha1.LVMVolumeGroup); ok && r.deleting {
		vg.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}
	return nil
}

// withLiveReader rebuilds e's reconciler with live as its APIReader.
func withLiveReader(e *env, n *node, live *liveReader) {
	live.Reader = e.client
	e.r = vgmanager.New(vgmanager.Options{
		Client: e.client, APIReader: live, Recorder: e.recorder, Disks: n.disks, LVM: n.lvm, Sink: e.sink,
		NodeName: nodeName, Namespace: ns, ResolvePath: n.resolve,
	})
}

// TestReconcileClaimsBeforeBuilding: a node writes its claim (a Progressing entry in its own node
// status) and reads the LVMVolumeGroup past the cache before it builds anything; it adds no
// finalizer to the shared object.
func TestReconcileClaimsBeforeBuilding(t *testing.T) {
	n := newNode([]string{"/dev/sdb"}, nil)
	e := newEnv(t, n, newCluster(nil),
		newVG("vg1", spec(thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyDynamic)), ownedBy(newCluster(nil))))
	var atLiveRead []string
	withLiveReader(e, n, &liveReader{onGet: func() {
		atLiveRead = append(atLiveRead, string(e.entries()["vg1"].Status))
		if n.fake.Count("vgcreate") != 0 {
			t.Error("the VG was built before the LVMVolumeGroup was read past the cache")
		}
	}})
	e.reconcile("vg1")
	if !slices.Equal(atLiveRead, []string{string(lvmv1alpha1.VGStatusProgressing)}) {
		t.Errorf("entry at the live read(s): %q, want one read after the Progressing claim", atLiveRead)
	}
	if n.fake.Count("vgcreate") != 1 || e.entries()["vg1"].Status != lvmv1alpha1.VGStatusReady {
		t.Errorf("%d vgcreate, entry %+v; want the VG built and Ready", n.fake.Count("vgcreate"), e.entries()["vg1"])
	}
	if got := e.vg("vg1").Finalizers; !slices.Equal(got, []string{lvmv1alpha1.VolumeGroupCleanupFinalizer}) {
		t.Errorf("finalizers %v, want the operator's only", got)
	}
	// Claimed: later reconciles do not read past the cache.
	e.reconcile("vg1")
	if len(atLiveRead) != 1 {
		t.Errorf("%d live reads, want the one of the first claim", len(atLiveRead))
	}
}

// TestReconcileBuildsNothingForADeletionItsClaimMissed: when the LVMVolumeGroup turns out, past the
// cache, to be deleted already, nothing is built, the reconcile comes back within a second, and the
// next one (the cache caught up) drops the claim.
func TestReconcileBuildsNothingForADeletionItsClaimMissed(t *testing.T) {
	n := newNode([]string{"/dev/sdb"}, nil)
	e := newEnv(t, n, newCluster(nil),
		newVG("vg1", spec(thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyDynamic)), ownedBy(newCluster(nil))))
	withLiveReader(e, n, &liveReader{deleting: true})
	res := e.reconcile("vg1")
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Second {
		t.Errorf("RequeueAfter %v, want within a second", res.RequeueAfter)
	}
	if n.fake.Count("vgcreate") != 0 {
		t.Fatal("the VG was built for an LVMVolumeGroup being deleted")
	}
	if err := e.client.Delete(t.Context(), e.vg("vg1")); err != nil {
		t.Fatal(err)
	}
	e.reconcile("vg1")
	if got := e.entries(); len(got) != 0 {
		t.Errorf("entries %+v after the teardown, want the claim dropped", got)
	}
}

// TestReconcileDropsAnOlderAgentsFinalizer: a node that had put a per-node finalizer on the
// LVMVolumeGroup (an older agent) removes its own once it has its claim, and leaves the other
// nodes' and the operator's; a node whose VG is gone drops its claim and its finalizer.
func TestReconcileDropsAnOlderAgentsFinalizer(t *testing.T) {
	n := newNode([]string{"/dev/sdb"}, nil)
	vg := newVG("vg1", spec(thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyDynamic)), ownedBy(newCluster(nil)))
	vg.Finalizers = append(vg.Finalizers, vgmanager.Finalizer("node-b"), vgmanager.Finalizer(nodeName),
		vgmanager.Finalizer("node-c"))
	e := newEnv(t, n, newCluster(nil), vg)
	e.reconcile("vg1") // claimed by its finalizer: the entry is written, the finalizer stays this time
	e.reconcile("vg1") // claimed by its entry: the finalizer goes
	want := []string{lvmv1alpha1.VolumeGroupCleanupFinalizer, vgmanager.Finalizer("node-b"),
		vgmanager.Finalizer("node-c")}
	if got := e.vg("vg1").Finalizers; !slices.Equal(got, want) {
		t.Errorf("finalizers %v, want %v", got, want)
	}
	if e.entries()["vg1"].Status != lvmv1alpha1.VGStatusReady {
		t.Errorf("entry %+v", e.entries()["vg1"])
	}
}

// TestReconcileBuildsNothingWhileItsCacheLags: after a read past the cache found the LVMVolumeGroup
// being deleted, a retry whose cache still shows it alive (and shows the node's own claim) builds
// nothing either: the claim is confirmed only by a read past the cache.
func TestReconcileBuildsNothingWhileItsCacheLags(t *testing.T) {
	n := newNode([]string{"/dev/sdb"}, nil)
	e := newEnv(t, n, newCluster(nil),
		newVG("vg1", spec(thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyDynamic)), ownedBy(newCluster(nil))))
	live := &liveReader{deleting: true}
	withLiveReader(e, n, live)
	e.reconcile("vg1")
	e.reconcile("vg1") // the cache has the claim now, and still no deletion
	if n.fake.Count("vgcreate") != 0 {
		t.Fatal("the VG was built on a retry whose cache lagged behind the deletion")
	}
	live.deleting = false // (a read past the cache that finds it alive confirms the claim)
	e.reconcile("vg1")
	if n.fake.Count("vgcreate") != 1 {
		t.Errorf("%d vgcreate once confirmed, want 1", n.fake.Count("vgcreate"))
	}
}
