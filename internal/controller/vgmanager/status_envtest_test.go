package vgmanager

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/testing/apiserver"
)

// TestStatusWithAPIServer applies a volume group's entry with its discovery policy and RAID health
// to a real API server, with our CRDs: the schema takes them (enums, required fields) and they read
// back as written; an entry applied without a policy reads RuntimeStatic, the schema's default.
func TestStatusWithAPIServer(t *testing.T) {
	cfg := apiserver.Start(t, &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	})
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := lvmv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lvms"}}); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{client: c, nodeName: "node-1", namespace: "lvms"}
	state := &lvmStateWithRAID
	raid := raidStatus(state, state.VGs[0], &lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType1})
	if err := r.applyStatus(t.Context(), "vg1", lvmv1alpha1.VGStatus{Name: "vg1", Status: lvmv1alpha1.VGStatusReady,
		DeviceDiscoveryPolicy: lvmv1alpha1.VGDeviceDiscoveryPreconfigured, RAIDStatus: raid}); err != nil {
		t.Fatal(err)
	}
	if err := r.applyStatus(t.Context(), "vg2", lvmv1alpha1.VGStatus{Name: "vg2",
		Status: lvmv1alpha1.VGStatusProgressing}); err != nil {
		t.Fatal(err)
	}
	got := &lvmv1alpha1.LVMVolumeGroupNodeStatus{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "lvms", Name: "node-1"}, got); err != nil {
		t.Fatal(err)
	}
	byName := map[string]lvmv1alpha1.VGStatus{}
	for _, st := range got.Spec.LiveNodeStatus {
		byName[st.Name] = st
	}
	vg1, vg2 := byName["vg1"], byName["vg2"]
	if vg1.DeviceDiscoveryPolicy != lvmv1alpha1.VGDeviceDiscoveryPreconfigured || vg1.RAIDStatus == nil ||
		vg1.RAIDStatus.Status != lvmv1alpha1.RAIDDegraded || len(vg1.RAIDStatus.LVHealth) != 1 ||
		vg1.RAIDStatus.LVHealth[0].HealthStatus != "partial" || *vg1.RAIDStatus.MinSyncPercent != 0 {
		t.Errorf("vg1 %+v (raid %+v)", vg1, vg1.RAIDStatus)
	}
	if vg2.DeviceDiscoveryPolicy != lvmv1alpha1.VGDeviceDiscoveryRuntimeStatic || vg2.RAIDStatus != nil {
		t.Errorf("vg2 %+v", vg2)
	}
}

// lvmStateWithRAID is a RAID1 VG of two disks, one missing, whose LV is partial and at 0 % sync.
var lvmStateWithRAID = lvmState(lvm.VG{Name: "vg1", PVCount: 2, MissingPVs: 1}, raidLV("data", "raid1", 0, "partial"))

func lvmState(vg lvm.VG, lvs ...lvm.LV) lvm.State { return lvm.State{VGs: []lvm.VG{vg}, LVs: lvs} }
