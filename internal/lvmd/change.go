package lvmd

import (
	"context"
	"fmt"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// ChangeLVRequest asks for changes lvm2 makes to an LV while it is in use. An empty field is left
// as it is; at least one must be set.
type ChangeLVRequest struct {
	Name        string
	DeviceClass string
	// ReadAhead is the LV's read-ahead: "auto" (lvm2's default, the kernel chooses), "none", or a
	// number of 512-byte sectors, which lvm2 rounds to the page size (lvm.ReadAhead.Effective).
	ReadAhead string
}

// ChangeLV changes an LV lvmd created while it may be in use (`lvchange`). Its read-ahead is kept
// in the VG metadata and set on the active device at once. A setting the cache shows in place runs
// no command. The origin of a copy-on-write snapshot (a thick volume with VolumeSnapshots) is
// ErrInUse: lvm2 refuses to change it.
func (s *Service) ChangeLV(ctx context.Context, req ChangeLVRequest) (LV, error) {
	dc, err := s.classes.Config().DeviceClass(req.DeviceClass)
	if err == nil {
		err = validateLVName(req.Name)
	}
	ra := lvm.ReadAhead(req.ReadAhead)
	if err == nil && ra.Validate() != nil {
		err = fmt.Errorf("%w: %w", ErrInvalidArgument, ra.Validate())
	}
	if err != nil {
		return LV{}, fmt.Errorf("change LV %s: %w", req.Name, err)
	}
	defer s.locks.lock(dc.VolumeGroup + "/" + req.Name)()
	if err := s.ensureState(ctx); err != nil {
		return LV{}, fmt.Errorf("change LV %s: %w", req.Name, err)
	}
	s.mu.Lock()
	vg, lv, err := s.lookup(dc, req.Name)
	if err == nil {
		if snap := s.cowSnapshotOf(vg.Name, req.Name); snap != "" {
			err = fmt.Errorf("%w: LV %s has copy-on-write snapshot %s, and lvm2 does not change the read-ahead "+
				"of such an origin: delete the volume's VolumeSnapshots first", ErrInUse, lv.FullName(), snap)
		}
	}
	s.mu.Unlock()
	if err != nil {
		return LV{}, fmt.Errorf("change LV %s: %w", req.Name, err)
	}
	if lv.ReadAhead == ra.Effective() {
		return toLV(dc, lv), nil
	}
	if err := s.lvm.SetReadAhead(ctx, vg, req.Name, ra); err != nil {
		return LV{}, s.refreshAfterFailure(ctx, fmt.Errorf("change LV %s: %w", req.Name, lvmError(err)))
	}
	s.apply(lvm.SetReadAheadOp{VG: vg.Name, Name: req.Name, ReadAhead: ra})
	return s.GetLV(ctx, req.Name, dc.Name)
}
