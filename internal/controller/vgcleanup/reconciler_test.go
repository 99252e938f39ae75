package vgcleanup

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

const ns = "lvms-system"

func claim(node string, vgs ...string) *lvmv1alpha1.LVMVolumeGroupNodeStatus {
	st := &lvmv1alpha1.LVMVolumeGroupNodeStatus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: node}}
	for _, vg := range vgs {
		st.Spec.LiveNodeStatus = append(st.Spec.LiveNodeStatus,
			lvmv1alpha1.VGStatus{Name: vg, Status: lvmv1alpha1.VGStatusReady})
	}
	return st
}

// TestReconcile: a deleted LVMVolumeGroup loses the operator's finalizer only when no node status,
// in the cache and then on the API server, has an entry for it; other finalizers stay.
func TestReconcile(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := lvmv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	const other = "cleanup.vgmanager.node.topolvm.io/node-old"
	tests := []struct {
		name         string
		deleting     bool
		cached, live []client.Object // node statuses
		wantReleased bool
	}{
		{name: "no claim", deleting: true, cached: []client.Object{claim("node-a", "vg2")},
			live: []client.Object{claim("node-a", "vg2")}, wantReleased: true},
		{name: "a node claims it", deleting: true, cached: []client.Object{claim("node-a", "vg2", "vg1")},
			live: []client.Object{claim("node-a", "vg2", "vg1")}},
		{name: "a claim the cache has not seen yet", deleting: true,
			live: []client.Object{claim("node-b", "vg1")}},
		{name: "not being deleted", live: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vg := &lvmv1alpha1.LVMVolumeGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vg1",
				Finalizers: []string{lvmv1alpha1.VolumeGroupCleanupFinalizer, other}}}
			if tt.deleting {
				vg.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			}
			cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(tt.cached, vg)...).Build()
			live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.live...).Build()
			r := New(cached, live, ns)
			if _, err := r.Reconcile(
				t.Context(),
				ctrl.Request{NamespacedName: client.ObjectKeyFromObject(vg)},
			); err != nil {
				t.Fatal(err)
			}
			got := &lvmv1alpha1.LVMVolumeGroup{}
			if err := cached.Get(t.Context(), client.ObjectKeyFromObject(vg), got); err != nil {
				t.Fatal(err)
			}
			released := !slices.Contains(got.Finalizers, lvmv1alpha1.VolumeGroupCleanupFinalizer)
			if released != tt.wantReleased || !slices.Contains(got.Finalizers, other) {
				t.Errorf(
					"finalizers %v; want the operator's released: %t, the other kept",
					got.Finalizers,
					tt.wantReleased,
				)
			}
		})
	}
}
