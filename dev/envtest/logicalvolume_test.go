package envtest

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

func newLogicalVolume(size string) *topolvmv1.LogicalVolume {
	return &topolvmv1.LogicalVolume{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("lv")},
		Spec: topolvmv1.LogicalVolumeSpec{
			Name:        "pvc-0a1b2c3d",
			NodeName:    "node-1",
			Size:        resource.MustParse(size),
			DeviceClass: "vg1",
		},
	}
}

// TestLogicalVolumeStatusSubresource: status is written only through /status, and spec writes do not
// touch it — the contract between the CSI controller (spec) and the node agent (status).
func TestLogicalVolumeStatusSubresource(t *testing.T) {
	ctx := context.Background()
	lv := newLogicalVolume("1Gi")
	if err := k8s.Create(ctx, lv); err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, lv) })

	// A status set through the main resource is dropped.
	lv.Status.VolumeID = "ignored"
	if err := k8s.Update(ctx, lv); err != nil {
		t.Fatalf("update: %v", err)
	}
	if lv.Status.VolumeID != "" {
		t.Fatalf("status written through the main resource: %+v", lv.Status)
	}

	current := resource.MustParse("1028Mi")
	lv.Status = topolvmv1.LogicalVolumeStatus{VolumeID: "a1b2", CurrentSize: &current}
	meta.SetStatusCondition(&lv.Status.Conditions, metav1.Condition{
		Type:    topolvmv1.ConditionCreated,
		Status:  metav1.ConditionTrue,
		Reason:  "Created",
		Message: "lvcreate succeeded",
	})
	if err := k8s.Status().Update(ctx, lv); err != nil {
		t.Fatalf("status update: %v", err)
	}

	lv.Spec.Size = resource.MustParse("2Gi")
	if err := k8s.Update(ctx, lv); err != nil {
		t.Fatalf("spec update: %v", err)
	}
	var got topolvmv1.LogicalVolume
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(lv), &got); err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Status.VolumeID != "a1b2" || got.Status.CurrentSize.Cmp(current) != 0 {
		t.Errorf("status lost by a spec update: %+v", got.Status)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, topolvmv1.ConditionCreated) {
		t.Errorf("condition Created lost: %+v", got.Status.Conditions)
	}
	if got.Spec.Size.String() != "2Gi" {
		t.Errorf("spec.size = %s, want 2Gi", got.Spec.Size.String())
	}
}

// TestLogicalVolumeInvalidUpdates: a volume never shrinks or moves.
func TestLogicalVolumeInvalidUpdates(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*topolvmv1.LogicalVolume)
		want   []string
	}{
		{"shrink", func(lv *topolvmv1.LogicalVolume) { lv.Spec.Size = resource.MustParse("512Mi") },
			[]string{"spec.size", "can only grow"}},
		{"move node", func(lv *topolvmv1.LogicalVolume) { lv.Spec.NodeName = "node-2" },
			[]string{"spec", "nodeName is immutable"}},
		{"change device class", func(lv *topolvmv1.LogicalVolume) { lv.Spec.DeviceClass = "vg2" },
			[]string{"spec", "deviceClass is immutable"}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lv := newLogicalVolume("1Gi")
			if err := k8s.Create(ctx, lv); err != nil {
				t.Fatalf("create: %v", err)
			}
			t.Cleanup(func() { _ = k8s.Delete(ctx, lv) })
			tt.mutate(lv)
			assertRejected(t, k8s.Update(ctx, lv), tt.want...)
		})
	}
}
