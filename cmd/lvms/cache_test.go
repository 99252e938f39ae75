package main

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

// The operator's and the node agents' caches drop managedFields from every object they hold.
func TestCacheStripsManagedFields(t *testing.T) {
	o := namespacedCache("lvms-system")
	if o.DefaultTransform == nil {
		t.Fatal("no DefaultTransform")
	}
	lv := &topolvmv1.LogicalVolume{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "lvms-node", Operation: metav1.ManagedFieldsOperationApply, Subresource: "status"},
	}}}
	got, err := o.DefaultTransform(lv)
	if err != nil {
		t.Fatal(err)
	}
	if m := got.(*topolvmv1.LogicalVolume).ManagedFields; m != nil {
		t.Errorf("managedFields %v kept in the cache", m)
	}
	for obj, by := range o.ByObject {
		if by.Transform != nil {
			t.Errorf("%T has a transform of its own, which replaces the default", obj)
		}
	}
}

// The operator caches Nodes without their images, and without managedFields as everything else.
func TestOperatorCacheDropsNodeImages(t *testing.T) {
	o := operatorCache("lvms-system")
	var by cache.ByObject
	ok := false
	for obj, b := range o.ByObject {
		if _, isNode := obj.(*corev1.Node); isNode {
			by, ok = b, true
		}
	}
	if !ok || by.Transform == nil {
		t.Fatal("no transform for Nodes")
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"x"}}}},
	}
	got, err := by.Transform(n)
	if err != nil {
		t.Fatal(err)
	}
	gn := got.(*corev1.Node)
	if gn.Status.Images != nil || gn.ManagedFields != nil || gn.Labels["a"] != "b" {
		t.Errorf("transformed Node %+v", gn)
	}
}

// The caches hold one entry per kind: ByObject is keyed by pointer, and with two entries of one kind
// the cache used either (the node agent then cached every node status now and then).
func TestCachesHaveOneEntryPerKind(t *testing.T) {
	for name, o := range map[string]cache.Options{
		"operator": operatorCache("lvms-system"),
		"node":     ownObjectsOnly(namespacedCache("lvms-system"), "lvms-system", "node-a"),
	} {
		seen := map[string]bool{}
		for obj := range o.ByObject {
			kind := fmt.Sprintf("%T", obj)
			if seen[kind] {
				t.Errorf("%s cache: two entries for %s", name, kind)
			}
			seen[kind] = true
		}
	}
}
