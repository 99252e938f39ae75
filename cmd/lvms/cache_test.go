package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
