package lvmd

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// errRestoreByCopy: the source of a writable snapshot in a thick class is itself a copy-on-write
// snapshot, which lvm2 cannot snapshot; CreateSnapshot hands the request to restoreByCopy.
var errRestoreByCopy = errors.New("source is a copy-on-write snapshot: restore by copy")

// restoringSuffix names the LV a restore by copy fills before it takes the volume's name.
const restoringSuffix = "-restoring"

// restoredFromTag marks an LV that restoreByCopy filled from the snapshot source.
func restoredFromTag(source string) string { return "lvms.restored-from=" + source }

// restoreByCopy restores a thick copy-on-write snapshot (a VolumeSnapshot of a thick device class) into
// a new writable LV req.Name of req.Size bytes. lvm2 cannot snapshot a snapshot, so the data is copied:
// an LV of the class is created as <name>-restoring, the snapshot's device is copied into it with dd
// (direct I/O, fsync) in chunks (copyDevice), and it is renamed to req.Name. An interrupted restore leaves only the -restoring
// LV, which the next attempt fills again, so req.Name never names a partial copy. The LV carries
// restoredFromTag(req.Source), which makes a repeated request return it.
func (s *Service) restoreByCopy(ctx context.Context, dc *DeviceClass, req SnapshotRequest) (LV, error) {
	tmp := req.Name + restoringSuffix
	lv, err := s.CreateLV(ctx, CreateLVRequest{
		Name: tmp, DeviceClass: dc.Name, Size: req.Size,
		Tags: append(slices.Clone(req.Tags), restoredFromTag(req.Source)),
	})
	if err != nil {
		return LV{}, fmt.Errorf("restore snapshot %s into %s: %w", req.Source, req.Name, err)
	}
	src, dst := lvm.DMPath(lv.VolumeGroup, req.Source), lvm.DMPath(lv.VolumeGroup, tmp)
	if err := s.copyDevice(ctx, src, dst); err != nil {
		return LV{}, fmt.Errorf("restore snapshot %s into %s: %w", req.Source, req.Name, err)
	}
	if err := s.renameLV(ctx, dc, tmp, req.Name); err != nil {
		err = fmt.Errorf("restore snapshot %s into %s: %w", req.Source, req.Name, err)
		return LV{}, s.refreshAfterFailure(ctx, err)
	}
	return s.GetLV(ctx, req.Name, dc.Name)
}

// renameLV renames LV from of the class to to through the lvm client, and in the cache.
func (s *Service) renameLV(ctx context.Context, dc *DeviceClass, from, to string) error {
	s.mu.Lock()
	vg, _, err := s.lookup(dc, from)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("rename %s: %w", from, err)
	}
	if err := s.lvm.RenameLV(ctx, vg, from, to); err != nil {
		return lvmError(err)
	}
	s.apply(lvm.RenameLVOp{VG: vg.Name, From: from, To: to})
	return nil
}
