package operator

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// TestCrossNodePolicy: copies between nodes are on with the flag, or with an LVMCluster of the
// operator's namespace asking for them that is not being deleted.
func TestCrossNodePolicy(t *testing.T) {
	cluster := func(ns string, policy lvmv1alpha1.CrossNodePolicy, deleting bool) client.Object {
		c := &lvmv1alpha1.LVMCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns}}
		if policy != "" {
			c.Spec.Transfer = &lvmv1alpha1.TransferSpec{CrossNode: policy}
		}
		if deleting {
			c.DeletionTimestamp, c.Finalizers = &metav1.Time{Time: time.Now()}, []string{"f"}
		}
		return c
	}
	s := runtime.NewScheme()
	if err := lvmv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		flag    bool
		cluster client.Object
		want    bool
	}{
		{"no LVMCluster", false, nil, false},
		{"the flag", true, nil, true},
		{"unset", false, cluster("lvms-system", "", false), false},
		{"Disabled", false, cluster("lvms-system", lvmv1alpha1.CrossNodeDisabled, false), false},
		{"Enabled", false, cluster("lvms-system", lvmv1alpha1.CrossNodeEnabled, false), true},
		{"Enabled, being deleted", false, cluster("lvms-system", lvmv1alpha1.CrossNodeEnabled, true), false},
		{"Enabled in another namespace", false, cluster("default", lvmv1alpha1.CrossNodeEnabled, false), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(s)
			if tt.cluster != nil {
				b = b.WithObjects(tt.cluster)
			}
			got, err := crossNodePolicy(tt.flag, b.Build(), "lvms-system")(t.Context())
			if err != nil || got != tt.want {
				t.Errorf("crossNode = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
