package vgmanager

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// PoolFullPercent is the fill level of a thin pool's data or metadata at which the volume group is
// reported Degraded. It is the threshold of the critical alerts ThinPoolDataUsageAtThresholdCritical
// and ThinPoolMetadataUsageAtThresholdCritical (config/prometheus): a thin pool that runs out of
// data space makes writes to every volume in it fail, and one out of metadata space can switch to
// read-only, so the status says so well before that.
const PoolFullPercent = 85.0

// poolFullness returns a problem for each of data and metadata of the thin pool of tp in vg that is
// filled to PoolFullPercent or more; none for a thick class or a pool that does not exist (yet).
func poolFullness(s *lvm.State, vg string, tp *lvmv1alpha1.ThinPoolConfig) []string {
	if tp == nil {
		return nil
	}
	pool, ok := s.LV(vg, tp.Name)
	if !ok || pool.SegType() != "thin-pool" {
		return nil
	}
	var out []string
	for _, part := range []struct {
		what string
		pct  float64
	}{{"data", pool.DataPercent}, {"metadata", pool.MetadataPercent}} {
		if part.pct >= PoolFullPercent {
			out = append(out, fmt.Sprintf(
				"thin pool %s is %.1f%% full of %s (Degraded from %.0f%%): delete volumes or snapshots in it, "+
					"or add disks to the device class so the pool can grow",
				tp.Name, part.pct, part.what, PoolFullPercent))
		}
	}
	return out
}

// capacity is the size and use of vg, and of the thin pool of tp when it exists, for the status.
func capacity(s *lvm.State, vg lvm.VG, tp *lvmv1alpha1.ThinPoolConfig) *lvmv1alpha1.VGCapacity {
	out := &lvmv1alpha1.VGCapacity{Size: quantity(vg.Size), Free: quantity(vg.Free)}
	if tp == nil {
		return out
	}
	if pool, ok := s.LV(vg.Name, tp.Name); ok && pool.SegType() == "thin-pool" {
		out.ThinPool = &lvmv1alpha1.ThinPoolCapacity{
			Name: tp.Name, Size: quantity(pool.Size),
			DataPercent: percent(pool.DataPercent), MetadataPercent: percent(pool.MetadataPercent),
		}
	}
	return out
}

func quantity(n uint64) resource.Quantity {
	return *resource.NewQuantity(int64(min(n, uint64(1)<<62)), resource.BinarySI)
}

// percent formats a fill level with one decimal, within 0..100.
func percent(p float64) string {
	return strconv.FormatFloat(min(max(p, 0), 100), 'f', 1, 64)
}
