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

// errCloneByCopy: a writable snapshot of a live LV in a thick class (a clone) is a full copy;
// CreateSnapshot hands the request to cloneByCopy.
var errCloneByCopy = errors.New("clone of a thick volume: clone by copy")

// ImageSuffix names the read-only snapshot a clone by copy reads the source from (the node agent's
// orphan reporter knows it too).
const ImageSuffix = "-image"

// RestoringSuffix names the LV a restore or clone by copy fills before it takes the volume's name.
const RestoringSuffix = "-restoring"

// restoredFromTag marks an LV that restoreByCopy filled from the snapshot source.
func restoredFromTag(source string) string { return "lvms.restored-from=" + source }

// restoreByCopy restores a thick copy-on-write snapshot (a VolumeSnapshot of a thick device class) into
// a new writable LV req.Name of req.Size bytes. lvm2 cannot snapshot a snapshot, so the data is copied:
// an LV of the class is created as <name>-restoring, the snapshot's device is copied into it with dd
// (direct I/O, fsync) in chunks (copyDevice), and it is renamed to req.Name. An interrupted restore leaves only the -restoring
// LV, which the next attempt fills again, so req.Name never names a partial copy. The LV carries
// restoredFromTag(req.Source), which makes a repeated request return it.
func (s *Service) restoreByCopy(ctx context.Context, dc *DeviceClass, req SnapshotRequest) (LV, error) {
	if err := s.fillCopy(ctx, dc, req, req.Source); err != nil {
		return LV{}, fmt.Errorf("restore snapshot %s into %s: %w", req.Source, req.Name, err)
	}
	return s.finishCopy(ctx, dc, req)
}

// cloneByCopy clones a live thick LV req.Source into a new writable LV req.Name of req.Size bytes (a
// writable copy-on-write snapshot would depend on its origin, and removing the origin would take it
// along). The copy reads an image of the source, a read-only copy-on-write snapshot <name>-image able
// to hold a rewrite of the whole source, so the clone is the source as it was at one moment however
// it is written meanwhile; the image is removed once the copy is complete and before the copy takes
// req.Name. The copy goes as a restore's (restoreByCopy): an interrupted clone leaves the image and
// the -restoring LV, which the next attempt uses again. While it copies, the clone needs free space
// for itself and for the image.
func (s *Service) cloneByCopy(ctx context.Context, dc *DeviceClass, req SnapshotRequest) (LV, error) {
	image := req.Name + ImageSuffix
	if _, err := s.CreateSnapshot(ctx, SnapshotRequest{Name: image, DeviceClass: dc.Name, Source: req.Source,
		Size: req.Size, ReadOnly: true, Tags: req.Tags}); err != nil {
		return LV{}, fmt.Errorf("clone %s into %s: the snapshot to copy from: %w", req.Source, req.Name, err)
	}
	err := s.fillCopy(ctx, dc, req, image)
	if rerr := s.RemoveLV(ctx, image, dc.Name); rerr != nil {
		err = errors.Join(err, fmt.Errorf("remove the snapshot copied from: %w", rerr))
	}
	if err != nil {
		return LV{}, fmt.Errorf("clone %s into %s: %w", req.Source, req.Name, err)
	}
	return s.finishCopy(ctx, dc, req)
}

// fillCopy creates <req.Name>-restoring, tagged restoredFromTag(req.Source), and copies LV from of
// the class into it.
func (s *Service) fillCopy(ctx context.Context, dc *DeviceClass, req SnapshotRequest, from string) error {
	tmp := req.Name + RestoringSuffix
	lv, err := s.CreateLV(ctx, CreateLVRequest{
		Name: tmp, DeviceClass: dc.Name, Size: req.Size,
		Tags: append(slices.Clone(req.Tags), restoredFromTag(req.Source)),
	})
	if err != nil {
		return err
	}
	return s.copyDevice(ctx, lvm.DMPath(lv.VolumeGroup, from), lvm.DMPath(lv.VolumeGroup, tmp))
}

// finishCopy renames the filled <req.Name>-restoring to req.Name and returns it.
func (s *Service) finishCopy(ctx context.Context, dc *DeviceClass, req SnapshotRequest) (LV, error) {
	if err := s.renameLV(ctx, dc, req.Name+RestoringSuffix, req.Name); err != nil {
		err = fmt.Errorf("copy %s into %s: %w", req.Source, req.Name, err)
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
