package lvmd

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// LV is a logical volume of a device class.
type LV struct {
	Name        string
	DeviceClass string
	VolumeGroup string
	// Size in bytes (the virtual size of a thin LV, the copy-on-write size
	// of a thick snapshot).
	Size uint64
	// Path is /dev/<vg>/<lv>.
	Path string
	Tags []string
	// Origin is the source of a snapshot.
	Origin string
	// ThinPool is the pool of a thin LV.
	ThinPool string
	ReadOnly bool
	// UUID is empty for an LV created since the last full state read.
	UUID string
	// ReadAhead is lvm2's read-ahead setting of the LV: auto, none or a number of 512-byte
	// sectors; empty when unknown (an LV created since the last full state read).
	ReadAhead string
}

func toLV(dc *DeviceClass, lv lvm.LV) LV {
	return LV{
		Name: lv.Name, DeviceClass: dc.Name, VolumeGroup: lv.VGName, Size: lv.Size, Path: lv.Path,
		Tags: slices.Clone(lv.Tags), Origin: lv.Origin, ThinPool: lv.PoolLV,
		ReadOnly: !lv.Attr.Writable(), UUID: lv.UUID, ReadAhead: string(lv.ReadAhead),
	}
}

// owned reports whether lvmd created the LV (it carries the lvms tag).
func owned(lv lvm.LV) bool { return slices.Contains(lv.Tags, lvm.Tag) }

// inClass reports whether lv is one of the class's LVs: a thin LV of the
// class's pool, or a non-thin LV of the class's VG.
func inClass(dc *DeviceClass, lv lvm.LV) bool {
	if lv.VGName != dc.VolumeGroup || lv.Hidden {
		return false
	}
	if dc.IsThin() {
		return lv.Attr.IsThin() && lv.PoolLV == dc.ThinPool.Name
	}
	return !lv.Attr.IsThin() && !lv.Attr.IsThinPool()
}

// CreateLVRequest asks for a new LV.
type CreateLVRequest struct {
	Name string
	// DeviceClass "" selects the default class.
	DeviceClass string
	// Size in bytes; lvm2 rounds it up to whole extents.
	Size uint64
	// LVCreateOptionClass, if set, replaces the class's lvcreate options
	// (and its striping and RAID settings).
	LVCreateOptionClass string
	// Tags are added to the ownership tag.
	Tags []string
}

// change is a planned change of an LV: the op its lvm2 command runs and the cache then applies
// (lvm.State.Apply), and the capacity reserved while the command runs.
type change struct {
	op lvm.Op
	// vg and name name the LV; vgState is the VG as cached when the change was planned: the lvm
	// client checks it is this node's before it changes it.
	vg, name string
	vgState  lvm.VG
	poolKey  string
	physical uint64
	virtual  uint64
	// logical is the LV bytes a thick change adds (checked against a RAID class's capacity, which
	// is in LV bytes).
	logical uint64
}

// CreateLV creates an LV, or returns the existing one of the same name, kind
// and size. On a service whose state has been read it runs exactly one lvm
// command.
func (s *Service) CreateLV(ctx context.Context, req CreateLVRequest) (LV, error) {
	dc, oc, err := s.resolve(req.DeviceClass, req.LVCreateOptionClass)
	if err != nil {
		return LV{}, fmt.Errorf("create LV %s: %w", req.Name, err)
	}
	tags, err := s.lvm.Identity().VolumeTags(req.Tags)
	err = lvmError(err)
	if err == nil {
		err = validateLVName(req.Name)
	}
	if err == nil && req.Size == 0 {
		err = fmt.Errorf("%w: size must be positive", ErrInvalidArgument)
	}
	if err != nil {
		return LV{}, fmt.Errorf("create LV %s: %w", req.Name, err)
	}
	defer s.locks.lock(dc.VolumeGroup + "/" + req.Name)()

	plan := func() (*change, *LV, error) { return s.planCreate(dc, oc, req, tags) }
	c, existing, err := s.withState(ctx, dc.RAID != nil, plan)
	if err != nil || existing != nil {
		return deref(existing), wrapf(err, "create LV %s in device class %s", req.Name, dc.Name)
	}
	lv, err := s.run(ctx, dc, c)
	return lv, wrapf(err, "create LV %s in device class %s", req.Name, dc.Name)
}

// run runs c's lvm2 command and applies c to the cache; when the command fails, the reservation
// is dropped and the state read again. It returns the LV as the cache then holds it.
func (s *Service) run(ctx context.Context, dc *DeviceClass, c *change) (LV, error) {
	var err error
	switch op := c.op.(type) {
	case lvm.CreateLVOp:
		err = s.lvm.CreateLV(ctx, c.vgState, op.LVOptions)
	case lvm.CreateThinLVOp:
		err = s.lvm.CreateThinLV(ctx, c.vgState, op.ThinLVOptions)
	case lvm.CreateSnapshotOp:
		err = s.lvm.CreateSnapshot(ctx, c.vgState, op.SnapshotOptions)
	case lvm.ExtendLVOp:
		err = s.lvm.ExtendLV(ctx, c.vgState, op.Name, op.ExtendOptions)
	default:
		err = fmt.Errorf("%w: lvmd runs no %T", ErrInvalidArgument, c.op)
	}
	if err != nil {
		s.release(c)
		return LV{}, s.refreshAfterFailure(ctx, lvmError(err))
	}
	s.applyReleasing(c, c.op)
	s.mu.Lock()
	lv, ok := s.state.LV(c.vg, c.name)
	s.mu.Unlock()
	if !ok {
		// The model refused what lvm2 did (applyReleasing asked for a state read): read it now.
		if err := s.Refresh(ctx); err != nil {
			return LV{}, err
		}
		return s.GetLV(ctx, c.name, dc.Name)
	}
	return toLV(dc, lv), nil
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

func wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

// resolve looks up the device class and the option class (nil if none).
func (s *Service) resolve(class, optionClass string) (*DeviceClass, *LVCreateOptionClass, error) {
	cfg := s.classes.Config()
	dc, err := cfg.DeviceClass(class)
	if err != nil {
		return nil, nil, err
	}
	if optionClass == "" {
		return dc, nil, nil
	}
	oc, err := cfg.OptionClass(optionClass)
	if err != nil {
		return nil, nil, err
	}
	return dc, oc, nil
}

// withState reads the state if needed and runs plan; when plan finds the
// class not ready, the state is read once more (the VG or pool may have been
// created since) and plan runs again. So it does when a RAID class looks full: removes
// do not know the PVs their extents return to, so the cached PV free counts a RAID
// class's capacity is computed from may be low until the state is read again.
func (s *Service) withState(
	ctx context.Context,
	raid bool,
	plan func() (*change, *LV, error),
) (*change, *LV, error) {
	if err := s.ensureState(ctx); err != nil {
		return nil, nil, err
	}
	c, lv, err := plan()
	if !errors.Is(err, ErrNotReady) && (!raid || !errors.Is(err, ErrInsufficientCapacity)) {
		return c, lv, err
	}
	if rerr := s.Refresh(ctx); rerr != nil {
		return nil, nil, errors.Join(err, rerr)
	}
	return plan()
}

// classVG returns the class's VG (and thin pool) from the cache; s.mu held.
func (s *Service) classVG(dc *DeviceClass) (lvm.VG, lvm.LV, error) {
	vg, ok := s.state.VG(dc.VolumeGroup)
	if !ok {
		return vg, lvm.LV{}, fmt.Errorf("%w: volume group %s does not exist", ErrNotReady, dc.VolumeGroup)
	}
	if !vg.Owned() {
		return vg, lvm.LV{}, fmt.Errorf("%w: volume group %s is not tagged %s", ErrNotReady, vg.Name, lvm.Tag)
	}
	if why := s.lvm.Identity().Foreign(vg.Tags); why != "" {
		return vg, lvm.LV{}, fmt.Errorf("%w: volume group %s is not this node's: %s", ErrNotReady, vg.Name, why)
	}
	if !dc.IsThin() {
		return vg, lvm.LV{}, nil
	}
	pool, ok := s.state.LV(vg.Name, dc.ThinPool.Name)
	if !ok || !pool.Attr.IsThinPool() {
		return vg, lvm.LV{}, fmt.Errorf("%w: thin pool %s/%s does not exist", ErrNotReady, vg.Name, dc.ThinPool.Name)
	}
	return vg, pool, nil
}

// planCreate validates a create against the cache and reserves capacity. It
// returns the existing LV instead when the create is a repeat.
func (s *Service) planCreate(
	dc *DeviceClass,
	oc *LVCreateOptionClass,
	req CreateLVRequest,
	tags []string,
) (*change, *LV, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vg, _, err := s.classVG(dc)
	if err != nil {
		return nil, nil, err
	}
	op := createOp(vg, dc, oc, req, tags)
	c := &change{op: op, vg: vg.Name, name: req.Name, vgState: vg}
	var size uint64
	switch o := op.(type) {
	case lvm.CreateThinLVOp:
		size = lvm.RoundUp(req.Size, vg.ExtentSize)
		c.poolKey, c.virtual = vg.Name+"/"+dc.ThinPool.Name, size
	case lvm.CreateLVOp:
		l := o.Layout()
		size = l.LVSize(req.Size, vg.ExtentSize)
		c.physical, c.logical = l.PhysicalExtents(size/max(vg.ExtentSize, 1))*vg.ExtentSize, size
	}
	if lv, ok := s.state.LV(vg.Name, req.Name); ok {
		out, err := existingLV(dc, lv, size)
		return nil, out, err
	}
	if err := s.reserve(dc, c); err != nil {
		return nil, nil, err
	}
	return c, nil, nil
}

// existingLV returns lv as the result of a repeated create, or why it is not.
func existingLV(dc *DeviceClass, lv lvm.LV, size uint64) (*LV, error) {
	switch {
	case !owned(lv):
		return nil, fmt.Errorf("%w: LV %s exists without tag %s", ErrNotOurs, lv.FullName(), lvm.Tag)
	case !inClass(dc, lv) || lv.Origin != "":
		return nil, fmt.Errorf(
			"%w: LV %s exists and is not a volume of device class %s",
			ErrAlreadyExists,
			lv.FullName(),
			dc.Name,
		)
	case lv.Size != size:
		return nil, fmt.Errorf("%w: LV %s exists with size %d, not %d", ErrAlreadyExists, lv.FullName(), lv.Size, size)
	}
	out := toLV(dc, lv)
	return &out, nil
}

// reserve checks c against the class's capacity and reserves it; s.mu held.
func (s *Service) reserve(dc *DeviceClass, c *change) error {
	free := classCapacity(dc, s.state, s.res, s.lvm.Identity()).FreeBytes
	need := c.physical
	switch {
	case c.poolKey != "":
		need = c.virtual
	case dc.RAID != nil:
		need = c.logical
	}
	if need > free {
		return fmt.Errorf(
			"%w: %d bytes needed, %d available in device class %s",
			ErrInsufficientCapacity,
			need,
			free,
			dc.Name,
		)
	}
	s.res.vg[c.vg] += c.physical
	if c.poolKey != "" {
		s.res.pool[c.poolKey] += c.virtual
	}
	return nil
}

// release drops c's reservation.
func (s *Service) release(c *change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(c)
}

func (s *Service) releaseLocked(c *change) {
	s.res.vg[c.vg] = sub(s.res.vg[c.vg], c.physical)
	if c.poolKey != "" {
		s.res.pool[c.poolKey] = sub(s.res.pool[c.poolKey], c.virtual)
	}
}
