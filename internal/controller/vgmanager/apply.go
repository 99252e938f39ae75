package vgmanager

import (
	"context"
	"errors"
	"fmt"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/devices"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// wipe runs the one-time wipe of the planned disks.
func (m *NodeManager) wipe(ctx context.Context, p *plan) error {
	log := ctrl.LoggerFrom(ctx)
	for _, d := range p.wipe {
		log.Info("Wiping device", "device", d, "volumeGroup", p.in.Name)
		if err := m.disks.Wipe(ctx, d, devices.ForceWipeDevicesAndDestroyAllData(true)); err != nil {
			return fmt.Errorf("wipe devices for VG %s: %w", p.in.Name, err)
		}
	}
	return nil
}

// apply creates or extends the VG, removes unselected empty PVs and creates or grows the thin pool.
func (m *NodeManager) apply(ctx context.Context, p *plan) error {
	log := ctrl.LoggerFrom(ctx).WithValues("volumeGroup", p.in.Name)
	if len(p.adopt) > 0 {
		log.Info("Tagging volume group with this node's identity", "tags", p.adopt)
		if err := m.lvm.AddVGTags(ctx, *p.vg, p.adopt...); err != nil {
			return err
		}
	}
	switch {
	case len(p.add) == 0:
	case p.vg == nil:
		log.Info("Creating volume group", "devices", p.add)
		if err := m.lvm.CreateVG(ctx, p.in.Name, p.add, p.in.Identity.Tags()...); err != nil {
			return err
		}
	default:
		log.Info("Extending volume group", "devices", p.add)
		if err := m.lvm.ExtendVG(ctx, *p.vg, p.add...); err != nil {
			return err
		}
	}
	if err := m.repairRAID(ctx, p); err != nil {
		return err
	}
	if len(p.remove) > 0 {
		log.Info("Removing devices from volume group", "devices", p.remove)
		if err := m.lvm.ReduceVG(ctx, *p.vg, p.remove...); err != nil {
			return err
		}
		for _, d := range p.remove {
			if err := m.lvm.RemovePV(ctx, lvm.PV{Name: d}); err != nil {
				return err
			}
		}
	}
	if tp := p.in.Spec.ThinPoolConfig; tp != nil {
		return m.ensurePool(ctx, p.in.Name, tp)
	}
	return nil
}

// ensurePool creates the thin pool, grows its metadata to metadataSize and its data to sizePercent
// of the (grown) VG, from the state as it is now.
func (m *NodeManager) ensurePool(ctx context.Context, name string, tp *lvmv1alpha1.ThinPoolConfig) error {
	s, err := m.lvm.State(ctx, name)
	if err != nil {
		return fmt.Errorf("thin pool of VG %s: %w", name, err)
	}
	vg, ok := s.VG(name)
	if !ok {
		return fmt.Errorf("thin pool of VG %s: %w", name, lvm.ErrNotFound)
	}
	a, err := poolActionFor(s, vg, tp, 0)
	if err != nil {
		return err
	}
	log := ctrl.LoggerFrom(ctx).WithValues("volumeGroup", name, "thinPool", tp.Name)
	if a.create != nil {
		log.Info("Creating thin pool", "extents", a.create.Extents)
		return m.lvm.CreateThinPool(ctx, vg, *a.create)
	}
	if a.zero {
		log.Info("Turning on zeroing of new chunks")
		if err := m.lvm.SetThinPoolZero(ctx, vg, tp.Name, true); err != nil {
			return err
		}
	}
	if a.metadataTo > 0 {
		log.Info("Growing thin pool metadata", "bytes", a.metadataTo, "autoExtend", a.autoMeta,
			"metadataPercent", a.metaPercent)
		if err := m.lvm.ExtendLV(ctx, vg, tp.Name, lvm.ExtendOptions{PoolMetadataSize: a.metadataTo}); err != nil {
			return err
		}
	}
	if a.extentsTo > 0 {
		log.Info("Extending thin pool", "extents", a.extentsTo, "percentOfVG", sizePercent(tp),
			"limitedByChunkSize", a.chunkLimited, "autoExtend", a.autoData, "dataPercent", a.dataPercent)
		ext := lvm.Extents(fmt.Sprintf("%d", a.extentsTo))
		if err := m.lvm.ExtendLV(ctx, vg, tp.Name, lvm.ExtendOptions{Extents: ext}); err != nil {
			return err
		}
	}
	return nil
}

// observe reads the VG again and derives the final status from it.
func (m *NodeManager) observe(ctx context.Context, p *plan) (lvmv1alpha1.VGStatus, error) {
	s, err := m.lvm.State(ctx, p.in.Name)
	if err != nil {
		err = fmt.Errorf("observe VG %s: %w", p.in.Name, err)
		return failedStatus(p.in.Name, p, err), err
	}
	p.state = s
	vg, ok := s.VG(p.in.Name)
	if !ok {
		err := fmt.Errorf("observe VG %s: %w", p.in.Name, lvm.ErrNotFound)
		return failedStatus(p.in.Name, nil, err), err
	}
	p.vg = &vg
	if tp := p.in.Spec.ThinPoolConfig; tp != nil {
		if lv, ok := s.LV(p.in.Name, tp.Name); !ok || lv.SegType() != "thin-pool" {
			p.problems = append(p.problems, "thin pool "+tp.Name+" is missing")
		}
	}
	return p.observed(), nil
}

// poolAction is the change the thin pool needs.
type poolAction struct {
	name string
	pct  int
	// create is set when the pool does not exist.
	create *lvm.ThinPoolOptions
	// extentsTo is the new data size in extents; 0 for none.
	extentsTo uint64
	// metadataTo is the new metadata size in bytes; 0 for none.
	metadataTo uint64
	// zero is set when an existing pool does not zero new chunks (made before lvms zeroed, or
	// changed by hand): a new volume could read a previous tenant's data.
	zero bool
	// growing is set while disks are about to be added (planning only).
	growing bool
	// chunkLimited is set when the pool's chunk size (chunk bytes) addresses less than sizePercent
	// of the VG: the pool grows to what it addresses and stays there (capToChunks).
	chunkLimited bool
	chunk        uint64
	// autoData and autoMeta are set when autoExtend grows the data (extentsTo) or the metadata
	// (metadataTo), filled to dataPercent and metaPercent of threshold or more.
	autoData, autoMeta       bool
	dataPercent, metaPercent float64
	threshold                int32
}

func (a poolAction) describe() string {
	var out []string
	if a.create != nil {
		out = append(out, fmt.Sprintf("create thin pool %s with %d%% of the free space", a.name, a.pct))
	}
	if a.zero {
		out = append(out, fmt.Sprintf("turn on zeroing of new chunks in thin pool %s", a.name))
	}
	if a.metadataTo > 0 && !a.autoMeta {
		out = append(out, fmt.Sprintf("grow the metadata of thin pool %s to %d bytes", a.name, a.metadataTo))
	}
	if a.autoMeta {
		out = append(out, fmt.Sprintf("grow the metadata of thin pool %s to %d bytes: it is %.1f%% full "+
			"(autoExtend from %d%%)", a.name, a.metadataTo, a.metaPercent, a.threshold))
	}
	switch {
	case a.autoData:
		out = append(out, fmt.Sprintf("extend thin pool %s to %d extents: its data is %.1f%% full "+
			"(autoExtend from %d%%)", a.name, a.extentsTo, a.dataPercent, a.threshold))
	case a.chunkLimited && a.extentsTo > 0:
		out = append(out, fmt.Sprintf("extend thin pool %s to %d bytes, all that its chunk size of %d bytes "+
			"addresses (not %d%% of the volume group)", a.name, maxPoolBytes(a.chunk), a.chunk, a.pct))
	case a.extentsTo > 0 || (a.growing && a.create == nil):
		out = append(out, fmt.Sprintf("extend thin pool %s to %d%% of the volume group", a.name, a.pct))
	}
	return strings.Join(out, "; ")
}

// errNotAPool reports an LV with the pool's name that is not a thin pool.
var errNotAPool = errors.New("exists but is not a thin pool")

// poolActionFor computes the thin pool change from state; adding > 0 says disks are about to join.
func poolActionFor(s *lvm.State, vg lvm.VG, tp *lvmv1alpha1.ThinPoolConfig, adding uint64) (poolAction, error) {
	a := poolAction{name: tp.Name, pct: sizePercent(tp), growing: adding > 0}
	pool, ok := s.LV(vg.Name, tp.Name)
	if !ok {
		o, err := thinPoolOptions(tp, vg.FreeCount*vg.ExtentSize/100*uint64(a.pct))
		if err != nil {
			return a, err
		}
		a.create = &o
		return a, nil
	}
	if pool.SegType() != "thin-pool" {
		return a, fmt.Errorf(
			"LV %s in VG %s %w (segment type %q): rename or remove it",
			tp.Name,
			vg.Name,
			errNotAPool,
			pool.SegType(),
		)
	}
	a.zero = !pool.Attr.Zero
	if vg.ExtentSize == 0 {
		return a, nil
	}
	free, meta := vg.FreeCount, pool.MetadataSize
	if want := metadataSize(tp); want > 0 {
		want = (want + vg.ExtentSize - 1) / vg.ExtentSize * vg.ExtentSize
		if want > pool.MetadataSize && free > 0 {
			a.metadataTo, meta = want, want
			free -= min(free, (want-pool.MetadataSize)/vg.ExtentSize)
		}
	}
	// Like lvm2's -l <pct>%FREE at creation, the pool's share counts its whole footprint: data,
	// metadata and the metadata spare (as large as the metadata).
	cur := pool.Size / vg.ExtentSize
	footprint := cur + 2*((meta+vg.ExtentSize-1)/vg.ExtentSize)
	target := uint64(a.pct) * vg.ExtentCount / 100
	if target > footprint && free > 0 {
		a.extentsTo = cur + min(target-footprint, free)
	}
	if len(pool.Segments) > 0 {
		a.extentsTo, a.chunkLimited = capToChunks(a.extentsTo, cur, vg.ExtentSize, pool.Segments[0].ChunkSize)
		a.chunk = pool.Segments[0].ChunkSize
	}
	if tp.AutoExtend != nil {
		if a.extentsTo > cur {
			free -= min(free, a.extentsTo-cur)
		}
		autoExtend(&a, tp.AutoExtend, vg, pool, free)
	}
	return a, nil
}

// thinPoolOptions builds the lvcreate options of a new pool of about poolBytes: sizePercent of the
// free extents, chunk size per policy (Static: chunkSize, or 128Ki doubled until it addresses the
// pool: staticChunkSize), metadata size when Static, and zeroing of new chunks (so a volume never
// reads a previous tenant's data).
func thinPoolOptions(tp *lvmv1alpha1.ThinPoolConfig, poolBytes uint64) (lvm.ThinPoolOptions, error) {
	o := lvm.ThinPoolOptions{
		Name:         tp.Name,
		Extents:      lvm.PercentOf(sizePercent(tp), "FREE"),
		MetadataSize: metadataSize(tp),
		Zero:         true,
	}
	if tp.ChunkSizeCalculationPolicy != lvmv1alpha1.ChunkSizeCalculationPolicyHost {
		c, err := staticChunkSize(tp.Name, tp.ChunkSize, lvmv1alpha1.DefaultChunkSize, poolBytes)
		if err != nil {
			return o, err
		}
		o.ChunkSize = c
	}
	return o, nil
}

// metadataSize is the wanted metadata size in bytes, 0 when lvm2 chooses (the Host policy). The
// Static policy without metadataSize stands for DefaultMetadataSize, as in upstream LVMS.
func metadataSize(tp *lvmv1alpha1.ThinPoolConfig) uint64 {
	if tp.MetadataSizeCalculationPolicy != lvmv1alpha1.MetadataSizeCalculationPolicyStatic {
		return 0
	}
	q := resourceQuantity(tp.MetadataSize, lvmv1alpha1.DefaultMetadataSize)
	if v, ok := q.AsInt64(); ok && v > 0 {
		return uint64(v)
	}
	return 0
}

// sizePercent is the pool's share of the VG (90 when unset).
func sizePercent(tp *lvmv1alpha1.ThinPoolConfig) int {
	if tp.SizePercent <= 0 {
		return 90
	}
	return int(tp.SizePercent)
}
