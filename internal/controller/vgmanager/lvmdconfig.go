package vgmanager

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// DeviceClassSink receives the device classes of this node, replacing the previous ones;
// *lvmd.DeviceClassManager implements it (live reconfiguration of the in-process lvmd).
type DeviceClassSink interface {
	Replace(cfg *lvmd.Config) error
}

// thickSpareGB is the spare of thick classes: the VG belongs to its device class alone, so none of
// it is held back.
const thickSpareGB = 0

// LVMDConfig builds the lvmd configuration from the volume groups of this node. A class is listed
// only when its VG exists on the node with the @lvms tag (and, for thin classes, its thin pool
// exists), so lvmd never offers capacity that is not there. Volume groups being deleted stay listed
// while their VG exists: lvmd must still be able to delete their volumes.
func LVMDConfig(vgs []lvmv1alpha1.LVMVolumeGroup, s *lvm.State) (*lvmd.Config, error) {
	cfg := &lvmd.Config{DeviceClasses: []lvmd.DeviceClass{}}
	for i := range vgs {
		v := &vgs[i]
		vg, ok := s.VG(v.Name)
		if !ok || !vg.Owned() {
			continue
		}
		dc := lvmd.DeviceClass{Name: v.Name, VolumeGroup: v.Name, Default: v.Spec.Default}
		if tp := v.Spec.ThinPoolConfig; tp != nil {
			if lv, ok := s.LV(v.Name, tp.Name); !ok || lv.SegType() != "thin-pool" {
				continue
			}
			dc.Type = lvmd.TypeThin
			dc.ThinPool = &lvmd.ThinPoolConfig{
				Name:               tp.Name,
				OverprovisionRatio: float64(max(tp.OverprovisionRatio, 1)),
			}
		} else {
			spare := uint64(thickSpareGB)
			dc.Type, dc.SpareGB = lvmd.TypeThick, &spare
		}
		if r := v.Spec.RAIDConfig; r != nil {
			raid, err := raidConfig(r)
			if err != nil {
				return nil, fmt.Errorf("device class %s: %w", v.Name, err)
			}
			dc.RAID = raid
		}
		cfg.DeviceClasses = append(cfg.DeviceClasses, dc)
	}
	slices.SortFunc(cfg.DeviceClasses, func(a, b lvmd.DeviceClass) int { return strings.Compare(a.Name, b.Name) })
	return cfg, nil
}

func raidConfig(r *lvmv1alpha1.RAIDConfig) (*lvmd.RAIDConfig, error) {
	out := &lvmd.RAIDConfig{Type: lvm.RAIDType(r.Type)}
	if r.Mirrors != nil {
		out.Mirrors = int(*r.Mirrors)
	}
	if r.Stripes != nil {
		out.Stripes = int(*r.Stripes)
	}
	if r.StripeSize != nil {
		v, ok := r.StripeSize.AsInt64()
		if !ok || v <= 0 {
			return nil, fmt.Errorf("invalid raidConfig.stripeSize %s", r.StripeSize.String())
		}
		out.StripeSize = fmt.Sprintf("%db", v)
	}
	return out, nil
}

// resourceQuantity returns q, or def when q is nil.
func resourceQuantity(q *resource.Quantity, def string) resource.Quantity {
	if q != nil {
		return *q
	}
	return resource.MustParse(def)
}
