package webhook

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// recommendedMaxSizePercent is the thin pool share above which upstream LVMS warns: the metadata
// cannot grow once the pool takes (nearly) the whole volume group.
const recommendedMaxSizePercent = 90

// warnings are upstream LVMS's admission warnings (W1-W5 in docs/api-compat.md) and ours (W6, W7).
// create says whether this is a create (upstream gives W5 only then).
func (v *LVMClusterValidator) warnings(
	ctx context.Context,
	c *lvmv1alpha1.LVMCluster,
	create bool,
) (admission.Warnings, error) {
	dcs := c.Spec.Storage.DeviceClasses
	var out admission.Warnings
	defaults := 0
	for i := range dcs {
		dc := &dcs[i]
		if dc.Default {
			defaults++
		}
		out = append(out, deviceClassWarnings(dc, len(dcs), create)...)
	}
	if defaults == 0 {
		out = append(out, "spec.storage.deviceClasses: no device class is default: PVCs must name an lvms-<name> "+
			"StorageClass explicitly unless another default StorageClass exists; set default: true on one device class")
	}
	missing, err := v.unknownPaths(ctx, c)
	if err != nil {
		return nil, err
	}
	return append(out, missing...), nil
}

func deviceClassWarnings(dc *lvmv1alpha1.DeviceClass, classes int, create bool) admission.Warnings {
	var out admission.Warnings
	prefix := fmt.Sprintf("device class %s: ", dc.Name)
	if tp := dc.ThinPoolConfig; tp != nil {
		if tp.SizePercent > recommendedMaxSizePercent {
			out = append(
				out,
				fmt.Sprintf("%sthinPoolConfig.sizePercent %d is above %d%%: the thin pool metadata cannot "+
					"be extended once it fills up; keep it at %d or below unless you are sure the metadata will not need to grow",
					prefix, tp.SizePercent, recommendedMaxSizePercent, recommendedMaxSizePercent),
			)
		}
		if tp.MetadataSizeCalculationPolicy == lvmv1alpha1.MetadataSizeCalculationPolicyStatic &&
			tp.MetadataSize == nil {
			out = append(
				out,
				prefix+"thinPoolConfig.metadataSizeCalculationPolicy is Static but metadataSize is unset: "+
					"set metadataSize (upstream LVMS assumes "+lvmv1alpha1.DefaultMetadataSize+")",
			)
		}
	}
	sel := dc.DeviceSelector
	explicit := sel.ListsDisks()
	if !explicit && classes == 1 {
		out = append(out, prefix+"no deviceSelector.paths: every blank disk of each selected node is used; "+
			"list the disks in deviceSelector.paths for production")
	}
	if create && !explicit && dc.DeviceDiscoveryPolicy == lvmv1alpha1.DeviceDiscoveryPolicyDynamic {
		out = append(out, prefix+"deviceDiscoveryPolicy is Dynamic without deviceSelector paths: disks that appear "+
			"later are added to the volume group too; set deviceDiscoveryPolicy: Static or list the disks")
	}
	if sel != nil && sel.ForceWipeDevicesAndDestroyAllData != nil && *sel.ForceWipeDevicesAndDestroyAllData &&
		len(sel.Paths) == 0 {
		out = append(out, prefix+"deviceSelector.forceWipeDevicesAndDestroyAllData only wipes disks listed in "+
			"deviceSelector.paths and optionalPaths are never wiped: move the disks to wipe into paths")
	}
	return out
}

// unknownPaths names device paths that no node has reported, once nodes have reported at all. Stable
// symlinks (/dev/disk/...) are resolved on the nodes, so only kernel names are compared.
func (v *LVMClusterValidator) unknownPaths(ctx context.Context, c *lvmv1alpha1.LVMCluster) (admission.Warnings, error) {
	var reports lvmv1alpha1.LVMVolumeGroupNodeStatusList
	if err := v.reader.List(ctx, &reports, client.InNamespace(v.namespace)); err != nil {
		return nil, fmt.Errorf("list LVMVolumeGroupNodeStatuses: %w", err)
	}
	if len(reports.Items) == 0 {
		return nil, nil
	}
	seen := sets.New[string]()
	for _, r := range reports.Items {
		for _, vg := range r.Spec.LiveNodeStatus {
			seen.Insert(vg.Devices...)
			for _, ex := range vg.Excluded {
				seen.Insert(ex.Name)
			}
		}
	}
	var out admission.Warnings
	for _, dc := range c.Spec.Storage.DeviceClasses {
		if dc.DeviceSelector == nil {
			continue
		}
		for _, p := range append(append([]lvmv1alpha1.DevicePath{}, dc.DeviceSelector.Paths...), dc.DeviceSelector.OptionalPaths...) {
			path := string(p)
			if strings.HasPrefix(path, "/dev/disk/") || seen.Has(path) {
				continue
			}
			out = append(
				out,
				fmt.Sprintf("device class %s: %s exists on no node that has reported its disks", dc.Name, path),
			)
		}
	}
	return out, nil
}
