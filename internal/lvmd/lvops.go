package lvmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// lookup returns the class's VG and the owned LV name of the class from the
// cache; s.mu held.
func (s *Service) lookup(dc *DeviceClass, name string) (lvm.VG, lvm.LV, error) {
	vg, _, err := s.classVG(dc)
	if err != nil {
		return vg, lvm.LV{}, err
	}
	lv, ok := s.state.LV(vg.Name, name)
	switch {
	case !ok || lv.Hidden:
		return vg, lv, fmt.Errorf("%w: LV %s/%s", ErrNotFound, vg.Name, name)
	case !owned(lv):
		return vg, lv, fmt.Errorf("%w: LV %s has no tag %s", ErrNotOurs, lv.FullName(), lvm.Tag)
	case !inClass(dc, lv):
		return vg, lv, fmt.Errorf(
			"%w: LV %s is not a volume of device class %s",
			ErrInvalidArgument,
			lv.FullName(),
			dc.Name,
		)
	}
	return vg, lv, nil
}

// GetLV returns an LV of a device class ("" = default) from the cache.
func (s *Service) GetLV(ctx context.Context, name, class string) (LV, error) {
	dc, err := s.classes.Config().DeviceClass(class)
	if err != nil {
		return LV{}, fmt.Errorf("get LV %s: %w", name, err)
	}
	if err := s.ensureState(ctx); err != nil {
		return LV{}, fmt.Errorf("get LV %s: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, lv, err := s.lookup(dc, name)
	if err != nil {
		return LV{}, fmt.Errorf("get LV %s: %w", name, err)
	}
	return toLV(dc, lv), nil
}

// ListLVs returns the LVs lvmd created in a device class ("" = default),
// from the cache, sorted by name.
func (s *Service) ListLVs(ctx context.Context, class string) ([]LV, error) {
	dc, err := s.classes.Config().DeviceClass(class)
	if err != nil {
		return nil, fmt.Errorf("list LVs: %w", err)
	}
	if err := s.ensureState(ctx); err != nil {
		return nil, fmt.Errorf("list LVs: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []LV
	for _, lv := range s.state.LVs {
		if inClass(dc, lv) && owned(lv) {
			out = append(out, toLV(dc, lv))
		}
	}
	slices.SortFunc(out, func(a, b LV) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// RemoveLV removes an LV lvmd created, and what an interrupted restore or
// clone by copy of it left (the -restoring LV it filled, the -image snapshot
// a clone read its source from, which would keep the source from being
// removed). Removing an LV that does not exist succeeds without running a
// command.
func (s *Service) RemoveLV(ctx context.Context, name, class string) error {
	if err := s.removeOne(ctx, name, class); err != nil {
		return err
	}
	for _, suffix := range []string{ImageSuffix, RestoringSuffix} {
		if validateLVName(name+suffix) != nil {
			continue // too long a name for lvm2: never made
		}
		if err := s.removeOne(ctx, name+suffix, class); err != nil {
			return fmt.Errorf("remove LV %s: what a copy into it left: %w", name, err)
		}
	}
	return nil
}

// removeOne removes one LV lvmd created, if it exists.
func (s *Service) removeOne(ctx context.Context, name, class string) error {
	dc, err := s.classes.Config().DeviceClass(class)
	if err == nil {
		err = validateLVName(name)
	}
	if err != nil {
		return fmt.Errorf("remove LV %s: %w", name, err)
	}
	defer s.locks.lock(dc.VolumeGroup + "/" + name)()
	if err := s.ensureState(ctx); err != nil {
		return fmt.Errorf("remove LV %s: %w", name, err)
	}
	vg, lv, placed, err := s.planRemove(dc, name)
	if err != nil || vg.Name == "" {
		return wrapf(err, "remove LV %s", name)
	}
	if err := s.zeroThick(ctx, vg, lv); err != nil {
		return s.refreshAfterFailure(ctx, fmt.Errorf("remove LV %s: %w", name, err))
	}
	err = s.removeLV(ctx, vg, name, func() { s.apply(lvm.RemoveLVOp{VG: vg.Name, Name: name}) })
	if err != nil {
		if lvm.IsNotFound(err) {
			return s.refreshAfterFailure(ctx, nil)
		}
		return s.refreshAfterFailure(ctx, fmt.Errorf("remove LV %s: %w", name, lvmError(err)))
	}
	if !placed {
		s.markPVsStale(vg.Name)
	}
	return nil
}

// planRemove returns the VG of the LV to remove, the LV, and whether the cache knows the PVs its
// extents return to (lvm.State.Placed); a zero VG when there is nothing to remove. An LV with a
// copy-on-write snapshot is in use (lvm2 would remove the snapshot with it).
func (s *Service) planRemove(dc *DeviceClass, name string) (lvm.VG, lvm.LV, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vg, lv, err := s.lookup(dc, name)
	if errors.Is(err, ErrNotFound) {
		return lvm.VG{}, lvm.LV{}, true, nil
	}
	if err != nil {
		return lvm.VG{}, lvm.LV{}, true, err
	}
	if snap := s.cowSnapshotOf(vg.Name, name); snap != "" {
		return lvm.VG{}, lvm.LV{}, true, fmt.Errorf("%w: LV %s has copy-on-write snapshot %s",
			ErrInUse, lv.FullName(), snap)
	}
	return vg, lv, s.state.Placed(vg.Name, name), nil
}

// cowSnapshotOf names a copy-on-write snapshot of LV vg/name in the cache, "" when it has none;
// s.mu held.
func (s *Service) cowSnapshotOf(vg, name string) string {
	for _, o := range s.state.LVs {
		if o.VGName == vg && o.Origin == name && o.Attr.IsSnapshot() {
			return o.Name
		}
	}
	return ""
}

// ResizeLV grows an LV to size bytes (rounded up as lvm2 does). A size not
// larger than the current one returns the LV unchanged without a command.
func (s *Service) ResizeLV(ctx context.Context, name, class string, size uint64) (LV, error) {
	dc, err := s.classes.Config().DeviceClass(class)
	if err == nil {
		err = validateLVName(name)
	}
	if err != nil {
		return LV{}, fmt.Errorf("resize LV %s: %w", name, err)
	}
	defer s.locks.lock(dc.VolumeGroup + "/" + name)()
	if err := s.ensureState(ctx); err != nil {
		return LV{}, fmt.Errorf("resize LV %s: %w", name, err)
	}
	c, current, err := s.planResize(dc, name, size)
	if err != nil || c == nil {
		return current, wrapf(err, "resize LV %s", name)
	}
	lv, err := s.run(ctx, dc, c)
	return lv, wrapf(err, "resize LV %s", name)
}

// planResize validates a resize and reserves its capacity; a nil change
// means the LV is large enough already.
func (s *Service) planResize(dc *DeviceClass, name string, size uint64) (*change, LV, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vg, lv, err := s.lookup(dc, name)
	if err != nil {
		return nil, LV{}, err
	}
	current := toLV(dc, lv)
	if lv.Attr.IsSnapshot() {
		return nil, LV{}, fmt.Errorf("%w: LV %s is a copy-on-write snapshot", ErrInvalidArgument, lv.FullName())
	}
	l := layoutOf(dc, false)
	newSize := l.LVSize(size, vg.ExtentSize)
	if dc.IsThin() {
		newSize = lvm.RoundUp(size, vg.ExtentSize)
	}
	if newSize <= lv.Size {
		return nil, current, nil
	}
	c := &change{vg: vg.Name, name: name, vgState: vg,
		op: lvm.ExtendLVOp{VG: vg.Name, Name: name, ExtendOptions: lvm.ExtendOptions{Size: newSize}}}
	if dc.IsThin() {
		c.poolKey, c.virtual = vg.Name+"/"+lv.PoolLV, newSize-lv.Size
	} else {
		ext := max(vg.ExtentSize, 1)
		c.physical = l.GrowExtents((newSize-lv.Size)/ext) * ext
		c.logical = newSize - lv.Size
	}
	if err := s.reserve(dc, c); err != nil {
		return nil, LV{}, err
	}
	return c, current, nil
}
