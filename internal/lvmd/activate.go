package lvmd

import (
	"context"
	"fmt"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// ActivateLV makes an LV lvmd made usable again when its device node is missing: it activates it
// (`lvchange -ay -K`, which changes nothing for an active LV) and has lvm2 create its missing device
// nodes (`vgmknodes`). An lvcreate killed midway, as when the node agent dies during a create, can
// leave the LV in the metadata but inactive, or active without its /dev/<vg>/<lv> link; a later
// CreateLV or GetLV finds it and would otherwise hand out a path that does not exist.
func (s *Service) ActivateLV(ctx context.Context, name, class string) error {
	dc, err := s.classes.Config().DeviceClass(class)
	if err != nil {
		return fmt.Errorf("activate LV %s: %w", name, err)
	}
	if err := s.ensureState(ctx); err != nil {
		return fmt.Errorf("activate LV %s: %w", name, err)
	}
	defer s.locks.lock(dc.VolumeGroup + "/" + name)()
	s.mu.Lock()
	vg, lv, err := s.lookup(dc, name)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("activate LV %s: %w", name, err)
	}
	if err := s.lvm.ActivateLV(ctx, vg, name, lvm.ActivateOptions{Active: true, IgnoreSkip: true}); err != nil {
		return fmt.Errorf("activate LV %s: %w", lv.FullName(), lvmError(err))
	}
	if err := s.lvm.MakeNodes(ctx, vg, name); err != nil {
		return fmt.Errorf("activate LV %s: %w", lv.FullName(), lvmError(err))
	}
	s.apply(lvm.ActivateLVOp{VG: vg.Name, Name: name, Active: true})
	return nil
}
