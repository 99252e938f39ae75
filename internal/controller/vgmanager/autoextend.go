package vgmanager

import (
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// autoExtension is a pool's autoExtend with the defaults of the CRD for what is unset.
func autoExtension(ae *lvmv1alpha1.ThinPoolAutoExtend) (threshold, step, maxPct uint64) {
	threshold, step, maxPct = 80, 20, 100
	if ae.ThresholdPercent > 0 {
		threshold = uint64(ae.ThresholdPercent)
	}
	if ae.Percent > 0 {
		step = uint64(ae.Percent)
	}
	if ae.MaxSizePercent > 0 {
		maxPct = uint64(ae.MaxSizePercent)
	}
	return threshold, step, maxPct
}

// autoExtend adds what autoExtend asks of the pool to a, within free extents of the VG: metadata
// filled to the threshold grows by step percent (with lvm2's metadata spare, which follows it, up
// to maxPoolMetadata); data filled to the threshold grows by step percent of its size, up to
// maxSizePercent of the VG less the metadata and spare, and to what its chunks address.
func autoExtend(a *poolAction, ae *lvmv1alpha1.ThinPoolAutoExtend, vg lvm.VG, pool lvm.LV, free uint64) {
	threshold, step, maxPct := autoExtension(ae)
	ext := vg.ExtentSize
	a.threshold, a.dataPercent, a.metaPercent = int32(threshold), pool.DataPercent, pool.MetadataPercent
	meta := max(a.metadataTo, pool.MetadataSize)
	if pool.MetadataPercent >= float64(threshold) && meta > 0 {
		want := min(lvm.RoundUp(meta+meta*step/100, ext), maxPoolMetadata/ext*ext)
		grow := min((want-min(want, meta))/ext, free/2) // the spare grows as much
		if grow > 0 {
			meta += grow * ext
			a.metadataTo, a.autoMeta = meta, true
			free -= 2 * grow
		}
	}
	cur := max(a.extentsTo, pool.Size/ext)
	if pool.DataPercent < float64(threshold) || cur == 0 {
		return
	}
	metaExt := lvm.RoundUp(meta, ext) / ext
	limit := maxPct * vg.ExtentCount / 100
	limit -= min(limit, 2*metaExt)
	want := min(cur+lvm.RoundUp(cur*step, 100)/100, limit, cur+free)
	want, _ = capToChunks(want, cur, ext, a.chunk) // a.chunk: set by poolActionFor, 0 when unknown
	if want > cur {
		a.extentsTo, a.autoData = want, true
	}
}
