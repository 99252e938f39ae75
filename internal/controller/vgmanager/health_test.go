package vgmanager

import (
	"testing"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

func TestDiscoveryPolicy(t *testing.T) {
	for _, tc := range []struct {
		spec lvmv1alpha1.LVMVolumeGroupSpec
		want lvmv1alpha1.VGDeviceDiscoveryPolicy
	}{
		{lvmv1alpha1.LVMVolumeGroupSpec{}, lvmv1alpha1.VGDeviceDiscoveryRuntimeStatic},
		{lvmv1alpha1.LVMVolumeGroupSpec{DeviceDiscoveryPolicy: lvmv1alpha1.DeviceDiscoveryPolicyDynamic},
			lvmv1alpha1.VGDeviceDiscoveryRuntimeDynamic},
		{lvmv1alpha1.LVMVolumeGroupSpec{DeviceDiscoveryPolicy: lvmv1alpha1.DeviceDiscoveryPolicyStatic},
			lvmv1alpha1.VGDeviceDiscoveryRuntimeStatic},
		{lvmv1alpha1.LVMVolumeGroupSpec{DeviceDiscoveryPolicy: lvmv1alpha1.DeviceDiscoveryPolicyDynamic,
			DeviceSelector: &lvmv1alpha1.DeviceSelector{OptionalPaths: []lvmv1alpha1.DevicePath{"/dev/sdb"}}},
			lvmv1alpha1.VGDeviceDiscoveryPreconfigured},
		{lvmv1alpha1.LVMVolumeGroupSpec{DeviceSelector: &lvmv1alpha1.DeviceSelector{Paths: []lvmv1alpha1.DevicePath{"/dev/sdb"}}},
			lvmv1alpha1.VGDeviceDiscoveryPreconfigured},
	} {
		if got := discoveryPolicy(tc.spec); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.spec, got, tc.want)
		}
	}
}

func raidLV(name, segtype string, sync float64, health string) lvm.LV {
	return lvm.LV{Name: name, VGName: "vg1", SyncPercent: sync, HealthStatus: health,
		Segments: []lvm.Segment{{Type: segtype}}}
}

func TestRAIDStatus(t *testing.T) {
	raid1 := &lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType1}
	raid5 := &lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType5}
	two := int32(2)
	for _, tc := range []struct {
		name     string
		missing  int
		cfg      *lvmv1alpha1.RAIDConfig
		lvs      []lvm.LV
		want     lvmv1alpha1.RAIDHealth
		minSync  int // -1: unset
		lvHealth int
	}{
		{"no LV yet", 0, raid1, nil, lvmv1alpha1.RAIDHealthy, -1, 0},
		{"in sync", 0, raid5, []lvm.LV{raidLV("a", "raid5_ls", 100, ""), raidLV("b", "raid5", 100, "")},
			lvmv1alpha1.RAIDHealthy, 100, 2},
		{"resynchronizing", 0, raid1, []lvm.LV{raidLV("a", "raid1", 100, ""), raidLV("b", "raid1", 42.7, "")},
			lvmv1alpha1.RAIDDegraded, 42, 2},
		{"a leg missing", 1, raid1, []lvm.LV{raidLV("a", "raid1", 100, "partial")}, lvmv1alpha1.RAIDDegraded, 100, 1},
		{"two legs of raid1 with one mirror", 2, raid1, []lvm.LV{raidLV("a", "raid1", 0, "partial")},
			lvmv1alpha1.RAIDFailed, 0, 1},
		{"two legs of raid1 with two mirrors", 2, &lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType1, Mirrors: &two},
			[]lvm.LV{raidLV("a", "raid1", 100, "partial")}, lvmv1alpha1.RAIDDegraded, 100, 1},
		{"not RAID LVs left out", 0, raid1, []lvm.LV{raidLV("t", "thin", 0, ""), {Name: "x_rimage_0", VGName: "vg1",
			Hidden: true, Segments: []lvm.Segment{{Type: "raid1"}}}}, lvmv1alpha1.RAIDHealthy, -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := &lvm.State{LVs: append(tc.lvs, raidLV("other-vg", "raid1", 0, "partial"))}
			state.LVs[len(state.LVs)-1].VGName = "vg2"
			got := raidStatus(state, lvm.VG{Name: "vg1", PVCount: 3, MissingPVs: tc.missing}, tc.cfg)
			if got.Status != tc.want || got.MemberCount != 3 || got.DegradedMemberCount != tc.missing ||
				len(got.LVHealth) != tc.lvHealth {
				t.Errorf("%+v", got)
			}
			switch {
			case tc.minSync < 0 && got.MinSyncPercent != nil:
				t.Errorf("minSyncPercent %d, want unset", *got.MinSyncPercent)
			case tc.minSync >= 0 && (got.MinSyncPercent == nil || *got.MinSyncPercent != tc.minSync):
				t.Errorf("minSyncPercent %v, want %d", got.MinSyncPercent, tc.minSync)
			}
		})
	}
}
