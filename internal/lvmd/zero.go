package lvmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// zeroThick writes zeroes over the extents a thick LV is about to free, so that the next volume given
// those extents never reads this one's data. Thin LVs need nothing: their pool zeroes every chunk it
// provisions (-Z y), and a thin LV reads zeroes where nothing was written. A copy-on-write snapshot is
// zeroed through its COW device, which is exactly the extents it owns (writing through the snapshot
// itself would only fill its COW store). A snapshot that is open is refused. The zeroing runs in chunks
// (zeroRange), so that no command's time grows with the volume's size. An inactive LV is activated
// first: lvremove would free its extents all the same.
func (s *Service) zeroThick(ctx context.Context, vg lvm.VG, lv lvm.LV) error {
	if lv.Name == "" || lv.Attr.IsThin() {
		return nil
	}
	if !lv.Attr.Active() {
		if err := s.lvm.ActivateLV(ctx, vg, lv.Name, lvm.ActivateOptions{Active: true, IgnoreSkip: true}); err != nil {
			return fmt.Errorf("activate %s to zero it: %w", lv.FullName(), err)
		}
	}
	// blkdiscard opens the device exclusively, so a volume still mounted or open is never zeroed.
	dev, force := lv.Path, false
	if lv.Attr.IsSnapshot() {
		// The COW device is held by the snapshot itself, so the exclusive open has to go (--force);
		// the snapshot's own open count stands in for it. A snapshot's size is its COW store's.
		if lv.Attr.IsOpen() {
			return fmt.Errorf("%w: snapshot %s is open", ErrInUse, lv.FullName())
		}
		dev, force = "/dev/mapper/"+dmEscape(vg.Name)+"-"+dmEscape(lv.Name)+"-cow", true
	}
	if err := s.zeroRange(ctx, dev, lv.Size, force); err != nil {
		return fmt.Errorf("zero %s before removing it: %w", lv.FullName(), err)
	}
	return nil
}

// dmEscape escapes a VG or LV name the way device-mapper names do ("-" doubled).
func dmEscape(name string) string { return strings.ReplaceAll(name, "-", "--") }
