package vgmanager_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// TestClasses: the device classes a node is to serve are the volume groups that select it and are
// not being deleted, less those it reports Failed.
func TestClasses(t *testing.T) {
	selector := func(value string) vgOption {
		return spec(lvmv1alpha1.LVMVolumeGroupSpec{NodeSelector: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "storage", Operator: corev1.NodeSelectorOpIn, Values: []string{value}},
			}}},
		}})
	}
	deleting := func(vg *lvmv1alpha1.LVMVolumeGroup) {
		vg.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		vg.Finalizers = []string{"keep"}
	}
	other := newVG("elsewhere")
	other.Namespace = "other"
	e := newEnv(t, newNode(nil, nil),
		newVG("thin"),                   // no selector: every node
		newVG("thick", selector("yes")), // the node is labelled storage=yes
		newVG("ssd", selector("no")),    // not this node
		newVG("old", deleting),          // being deleted
		other,                           // another namespace
	)
	got, err := e.r.Classes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"thick", "thin"}; !slices.Equal(got, want) {
		t.Errorf("Classes = %v, want %v", got, want)
	}
}
