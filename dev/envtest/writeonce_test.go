package envtest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// TestWriteOnceFields proves, for every writer (here the admin, past any admission policy), that a
// LogicalVolume's status.volumeID is set once and never changed or removed (the owning node removes
// that LV on delete), and that an LVMVolumeGroup's wipe opt-in cannot be set, changed or removed
// after creation.
func TestWriteOnceFields(t *testing.T) {
	ctx := t.Context()
	ensureNamespace(ctx, t, testNamespace)
	lv := &topolvmv1.LogicalVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "write-once"},
		Spec: topolvmv1.LogicalVolumeSpec{
			Name: "write-once", NodeName: "n1", DeviceClass: "thin", Size: resource.MustParse("1Gi"),
		},
	}
	createAsAdmin(ctx, t, lv)
	vg := &lvmv1alpha1.LVMVolumeGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "write-once", Namespace: testNamespace},
		Spec: lvmv1alpha1.LVMVolumeGroupSpec{DeviceSelector: &lvmv1alpha1.DeviceSelector{
			Paths: []lvmv1alpha1.DevicePath{"/dev/sdb"},
		}},
	}
	createAsAdmin(ctx, t, vg)
	const volumeIDRefusal = "status.volumeID is set once"
	const wipeRefusal = "forceWipeDevicesAndDestroyAllData is immutable"
	steps := []struct {
		name    string
		obj     client.Object
		status  bool
		patch   string
		refusal string
	}{
		{"volumeID set the first time", lv, true, `{"status":{"volumeID":"write-once"}}`, ""},
		{"volumeID set again to the same", lv, true, `{"status":{"volumeID":"write-once","message":"x"}}`, ""},
		{"volumeID changed", lv, true, `{"status":{"volumeID":"another-lv"}}`, volumeIDRefusal},
		{"volumeID removed", lv, true, `{"status":{"volumeID":null}}`, volumeIDRefusal},
		{"volumeID emptied", lv, true, `{"status":{"volumeID":""}}`, volumeIDRefusal},
		{"wipe opt-in added", vg, false, `{"spec":{"deviceSelector":{"forceWipeDevicesAndDestroyAllData":true}}}`,
			wipeRefusal},
		{"other spec fields still change", vg, false, `{"spec":{"default":true}}`, ""},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			patch := client.RawPatch(types.MergePatchType, []byte(s.patch))
			var err error
			if s.status {
				err = k8s.Status().Patch(ctx, s.obj, patch)
			} else {
				err = k8s.Patch(ctx, s.obj, patch)
			}
			switch {
			case s.refusal == "" && err != nil:
				t.Fatalf("%s: %v, want allowed", s.patch, err)
			case s.refusal != "" && (err == nil || !strings.Contains(err.Error(), s.refusal)):
				t.Fatalf("%s: %v, want refused with %q", s.patch, err, s.refusal)
			}
		})
	}
}
