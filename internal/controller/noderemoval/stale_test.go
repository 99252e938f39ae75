package noderemoval_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/noderemoval"
)

// TestStaleCacheReleasesNothing: the cache does not have a Node yet (created a moment ago, or lost in
// a relist) and answers NotFound; the API server has it. Nothing of the node is released: its
// finalizer on an LVMVolumeGroup and its node status stay.
func TestStaleCacheReleasesNothing(t *testing.T) {
	ctx := t.Context()
	const node = "stale-cache"
	if err := k8s.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}) })
	vg := &lvmv1alpha1.LVMVolumeGroup{ObjectMeta: metav1.ObjectMeta{Name: "stale-vg", Namespace: ns,
		Finalizers: []string{lvmv1alpha1.CleanupFinalizerPrefix + node}}}
	if err := k8s.Create(ctx, vg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var cur lvmv1alpha1.LVMVolumeGroup
		if k8s.Get(context.Background(), client.ObjectKeyFromObject(vg), &cur) == nil {
			cur.Finalizers = nil
			_ = k8s.Update(context.Background(), &cur)
			_ = k8s.Delete(context.Background(), &cur)
		}
	})
	status := &lvmv1alpha1.LVMVolumeGroupNodeStatus{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: ns}}
	if err := k8s.Create(ctx, status); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), status) })

	r := noderemoval.New(
		staleCache{k8s},
		ns,
		noderemoval.Options{ReleaseVolumes: true, DeleteClaims: true, APIReader: k8s},
	)
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: node}}); err != nil {
		t.Fatal(err)
	}
	var got lvmv1alpha1.LVMVolumeGroup
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(vg), &got); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got.Finalizers, lvmv1alpha1.CleanupFinalizerPrefix+node) {
		t.Errorf(
			"finalizers %v: the finalizer of a node that exists was released on a stale cache's word",
			got.Finalizers,
		)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(status), &lvmv1alpha1.LVMVolumeGroupNodeStatus{}); err != nil {
		t.Errorf("the node status of a node that exists: %v", err)
	}
}

// staleCache is a client whose cache has no Node.
type staleCache struct{ client.Client }

func (c staleCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Node); ok {
		return apierrors.NewNotFound(corev1.Resource("nodes"), key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}
