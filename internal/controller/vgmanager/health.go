package vgmanager

import (
	"math"
	"strings"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// discoveryPolicy is the volume group's effective device discovery (LVMS's deviceDiscoveryPolicy of
// the node status): Preconfigured when the selector lists disks, else by the class's policy.
func discoveryPolicy(spec lvmv1alpha1.LVMVolumeGroupSpec) lvmv1alpha1.VGDeviceDiscoveryPolicy {
	switch sel := spec.DeviceSelector; {
	case sel != nil && (len(sel.Paths) > 0 || len(sel.OptionalPaths) > 0):
		return lvmv1alpha1.VGDeviceDiscoveryPreconfigured
	case spec.DeviceDiscoveryPolicy == lvmv1alpha1.DeviceDiscoveryPolicyDynamic:
		return lvmv1alpha1.VGDeviceDiscoveryRuntimeDynamic
	}
	return lvmv1alpha1.VGDeviceDiscoveryRuntimeStatic
}

// raidStatus is the RAID health of volume group vg (with RAID configuration cfg) in state: its
// members and the missing ones, and each RAID LV's sync progress and health. Failed when more
// members are missing than the level tolerates or an LV failed; Degraded when a member is missing or
// an LV is not healthy or not in sync; Healthy otherwise.
func raidStatus(state *lvm.State, vg lvm.VG, cfg *lvmv1alpha1.RAIDConfig) *lvmv1alpha1.RAIDStatus {
	out := &lvmv1alpha1.RAIDStatus{Status: lvmv1alpha1.RAIDHealthy, MemberCount: vg.PVCount,
		DegradedMemberCount: vg.MissingPVs}
	failed, degraded := vg.MissingPVs > tolerance(cfg), vg.MissingPVs > 0
	for _, lv := range state.LVs {
		level := raidLevel(lv)
		if lv.VGName != vg.Name || lv.Hidden || level == "" {
			continue
		}
		sync := int(math.Floor(lv.SyncPercent))
		out.LVHealth = append(out.LVHealth, lvmv1alpha1.RAIDLVHealth{Name: lv.Name, RAIDType: level,
			SyncPercent: sync, HealthStatus: lv.HealthStatus})
		if out.MinSyncPercent == nil || sync < *out.MinSyncPercent {
			out.MinSyncPercent = &sync
		}
		failed = failed || lv.HealthStatus == "failed"
		degraded = degraded || lv.HealthStatus != "" || sync < 100
	}
	switch {
	case failed:
		out.Status = lvmv1alpha1.RAIDFailed
	case degraded:
		out.Status = lvmv1alpha1.RAIDDegraded
	}
	return out
}

// raidLevel is the RAID level of the LV's segment type ("raid5_ls" is raid5), "" for other LVs.
func raidLevel(lv lvm.LV) string {
	if len(lv.Segments) == 0 {
		return ""
	}
	t := lv.Segments[0].Type
	for _, level := range []string{"raid10", "raid1", "raid4", "raid5", "raid6"} {
		if t == level || strings.HasPrefix(t, level+"_") {
			return level
		}
	}
	return ""
}

// tolerance is how many members the RAID level may lose: the mirrors of raid1 and raid10 (at least
// one), one for raid4 and raid5, two for raid6.
func tolerance(cfg *lvmv1alpha1.RAIDConfig) int {
	switch cfg.Type {
	case lvmv1alpha1.RAIDType1, lvmv1alpha1.RAIDType10:
		if cfg.Mirrors != nil && *cfg.Mirrors > 0 {
			return int(*cfg.Mirrors)
		}
		return 1
	case lvmv1alpha1.RAIDType6:
		return 2
	}
	return 1
}
