package lvmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

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
}

func toLV(dc *DeviceClass, lv lvm.LV) LV {
	return LV{
		Name: lv.Name, DeviceClass: dc.Name, VolumeGroup: lv.VGName, Size: lv.Size, Path: lv.Path,
		Tags: slices.Clone(lv.Tags), Origin: lv.Origin, ThinPool: lv.PoolLV,
		ReadOnly: !lv.Attr.Writable(), UUID: lv.UUID,
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

// change is a planned cache update: bytes reserved while the command runs,
// then applied to the state.
type change struct {
	vg, poolKey string
	// vgState is the VG as cached when the change was planned: the lvm client checks it is this
	// node's before it changes it.
	vgState  lvm.VG
	physical uint64
	virtual  uint64
	// logical is the LV bytes a thick change adds (checked against a RAID class's
	// capacity, which is in LV bytes); layout and grow tell how its extents are
	// taken from the cached PVs (a grow adds no RAID metadata).
	logical uint64
	layout  layout
	grow    bool
	lv      lvm.LV
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

	plan := func() (*change, *LV, error) { return s.planCreate(dc, oc != nil, req, tags) }
	c, existing, err := s.withState(ctx, dc.RAID != nil, plan)
	if err != nil || existing != nil {
		return deref(existing), wrapf(err, "create LV %s in device class %s", req.Name, dc.Name)
	}
	if err := s.createLV(ctx, c.vgState, dc, oc, req.Name, c.lv.Size, tags); err != nil {
		s.release(c)
		err = fmt.Errorf("create LV %s in device class %s: %w", req.Name, dc.Name, lvmError(err))
		return LV{}, s.refreshAfterFailure(ctx, err)
	}
	s.commit(c)
	return toLV(dc, c.lv), nil
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
	optionClass bool,
	req CreateLVRequest,
	tags []string,
) (*change, *LV, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vg, pool, err := s.classVG(dc)
	if err != nil {
		return nil, nil, err
	}
	l := layoutOf(dc, optionClass)
	size := l.lvSize(req.Size, vg.ExtentSize)
	if dc.IsThin() {
		size = roundUp(req.Size, vg.ExtentSize)
	}
	if lv, ok := s.state.LV(vg.Name, req.Name); ok {
		out, err := existingLV(dc, lv, size)
		return nil, out, err
	}
	c := &change{vg: vg.Name, vgState: vg, lv: lvm.LV{
		Name: req.Name, VGName: vg.Name, Size: size, Tags: tags,
		Path: "/dev/" + vg.Name + "/" + req.Name, DMPath: dmPath(vg.Name, req.Name),
		Attr: mustAttr("-wi-a-----"),
	}}
	if dc.IsThin() {
		c.poolKey, c.virtual = vg.Name+"/"+pool.Name, size
		c.lv.PoolLV, c.lv.Attr = pool.Name, mustAttr("Vwi-a-tz--")
	} else {
		c.physical, c.logical, c.layout = l.physical(size, vg.ExtentSize), size, l
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

// commit releases c's reservation and adds its LV to the cache.
func (s *Service) commit(c *change) {
	lv := c.lv
	s.applyReleasing(c, func(st *lvm.State) {
		if _, ok := st.LV(lv.VGName, lv.Name); ok {
			return
		}
		lv.Tags = slices.Clone(lv.Tags)
		st.LVs = append(st.LVs, lv)
		updateVG(st, lv.VGName, func(vg *lvm.VG) {
			vg.LVCount++
			takeBytes(vg, c.physical)
		})
		takeChangePVs(st, c)
	})
}

// takeChangePVs takes a thick change's extents from the cached PVs of its VG.
func takeChangePVs(st *lvm.State, c *change) {
	if vg, ok := st.VG(c.vg); ok && c.poolKey == "" && vg.ExtentSize > 0 {
		takePVExtents(st, vg, c.layout, c.logical/vg.ExtentSize, !c.grow)
	}
}

// takeBytes moves n bytes of the VG from free to used (negative: back).
func takeBytes(vg *lvm.VG, n uint64) {
	vg.Free = sub(vg.Free, n)
	if vg.ExtentSize > 0 {
		vg.FreeCount = sub(vg.FreeCount, n/vg.ExtentSize)
	}
}

func giveBytes(vg *lvm.VG, n uint64) {
	vg.Free += n
	if vg.ExtentSize > 0 {
		vg.FreeCount += n / vg.ExtentSize
	}
}

func updateVG(st *lvm.State, name string, f func(*lvm.VG)) {
	if i := slices.IndexFunc(st.VGs, func(vg lvm.VG) bool { return vg.Name == name }); i >= 0 {
		f(&st.VGs[i])
	}
}

func dmPath(vg, lv string) string {
	return "/dev/mapper/" + strings.ReplaceAll(vg, "-", "--") + "-" + strings.ReplaceAll(lv, "-", "--")
}

func mustAttr(s string) lvm.LVAttr {
	a, err := lvm.ParseLVAttr(s)
	if err != nil {
		panic(err)
	}
	return a
}
