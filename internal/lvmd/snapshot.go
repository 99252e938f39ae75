package lvmd

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// SnapshotRequest asks for a snapshot of an LV in the same device class.
type SnapshotRequest struct {
	Name string
	// DeviceClass "" selects the default class.
	DeviceClass string
	// Source is the LV to snapshot.
	Source string
	// Size is required for thick classes. Of a read-only snapshot: the
	// bytes of changed data the copy-on-write store holds (with its
	// metadata, rounded up to whole extents; at most what a rewrite of the
	// whole source needs, which is what the CSI controller asks for). Of a
	// restore by copy: the size of the new LV. Thin snapshots have the
	// source's virtual size; Size is ignored.
	Size uint64
	// ReadOnly makes a read-only snapshot (a VolumeSnapshot); otherwise it
	// is writable (a thin clone, or a volume restored from a snapshot).
	ReadOnly bool
	// Tags are added to the ownership tag.
	Tags []string
}

// CreateSnapshot creates a snapshot of an LV lvmd created: in a thin class a
// thin snapshot in the same pool, active at once; in a thick class a read-only
// copy-on-write snapshot of req.Size bytes. A snapshot of the same name and
// source that exists already is returned. On a service whose state has been
// read it runs exactly one lvm command. A writable snapshot of a thick
// copy-on-write snapshot (restoring a VolumeSnapshot) is a copy instead, see
// restoreByCopy; so is a writable snapshot of a live thick LV (a clone), see
// cloneByCopy.
func (s *Service) CreateSnapshot(ctx context.Context, req SnapshotRequest) (LV, error) {
	dc, err := s.classes.Config().DeviceClass(req.DeviceClass)
	if err == nil {
		err = validateLVName(req.Name)
	}
	if err == nil {
		err = validateLVName(req.Source)
	}
	tags, terr := s.lvm.Identity().VolumeTags(req.Tags)
	terr = lvmError(terr)
	if err == nil {
		err = terr
	}
	if err == nil && !dc.IsThin() && req.Size == 0 {
		err = fmt.Errorf("%w: a snapshot in thick device class %s needs a size", ErrInvalidArgument, dc.Name)
	}
	if err != nil {
		return LV{}, fmt.Errorf("create snapshot %s of %s: %w", req.Name, req.Source, err)
	}
	defer s.locks.lock(dc.VolumeGroup + "/" + req.Name)()

	plan := func() (*change, *LV, error) { return s.planSnapshot(dc, req, tags) }
	c, existing, err := s.withState(ctx, false, plan)
	switch {
	case errors.Is(err, errRestoreByCopy):
		return s.restoreByCopy(ctx, dc, req)
	case errors.Is(err, errCloneByCopy):
		return s.cloneByCopy(ctx, dc, req)
	}
	if err != nil || existing != nil {
		return deref(existing), wrapf(err, "create snapshot %s of %s", req.Name, req.Source)
	}
	lv, err := s.run(ctx, dc, c)
	return lv, wrapf(err, "create snapshot %s of %s", req.Name, req.Source)
}

// planSnapshot validates a snapshot against the cache and reserves its
// capacity; it returns the existing snapshot for a repeated request.
func (s *Service) planSnapshot(dc *DeviceClass, req SnapshotRequest, tags []string) (*change, *LV, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vg, src, err := s.lookup(dc, req.Source)
	if err != nil {
		return nil, nil, fmt.Errorf("source: %w", err)
	}
	if lv, ok := s.state.LV(vg.Name, req.Name); ok {
		out, err := existingSnapshot(dc, lv, req)
		return nil, out, err
	}
	switch {
	case src.Attr.IsSnapshot() && !dc.IsThin() && !req.ReadOnly:
		return nil, nil, errRestoreByCopy
	case src.Attr.IsSnapshot():
		return nil, nil, fmt.Errorf("%w: %s is a copy-on-write snapshot", ErrInvalidArgument, src.FullName())
	case !dc.IsThin() && !req.ReadOnly:
		return nil, nil, errCloneByCopy
	}
	o := lvm.SnapshotOptions{
		Name:     req.Name,
		Origin:   src.Name,
		ReadOnly: req.ReadOnly,
		Activate: dc.IsThin(),
		Tags:     tags,
	}
	c := &change{vg: vg.Name, name: req.Name, vgState: vg}
	if dc.IsThin() {
		c.poolKey, c.virtual = vg.Name+"/"+src.PoolLV, src.Size
	} else {
		o.Size = lvm.RoundUp(cowSize(min(req.Size, src.Size)), vg.ExtentSize)
		c.physical, c.logical = o.Size, o.Size
	}
	c.op = lvm.CreateSnapshotOp{VG: vg.Name, SnapshotOptions: o}
	if err := s.reserve(dc, c); err != nil {
		return nil, nil, err
	}
	return c, nil, nil
}

// existingSnapshot returns lv as the result of a repeated snapshot request,
// or why it is not.
func existingSnapshot(dc *DeviceClass, lv lvm.LV, req SnapshotRequest) (*LV, error) {
	switch {
	case !owned(lv):
		return nil, fmt.Errorf("%w: LV %s exists without tag %s", ErrNotOurs, lv.FullName(), lvm.Tag)
	case !req.ReadOnly && inClass(dc, lv) && slices.Contains(lv.Tags, restoredFromTag(req.Source)):
		// A finished restore by copy (restoreByCopy).
	case !inClass(dc, lv) || lv.Origin != req.Source:
		return nil, fmt.Errorf(
			"%w: LV %s exists and is not a snapshot of %s",
			ErrAlreadyExists,
			lv.FullName(),
			req.Source,
		)
	case lv.Attr.Writable() == req.ReadOnly:
		return nil, fmt.Errorf("%w: snapshot %s exists with another access mode", ErrAlreadyExists, lv.FullName())
	}
	out := toLV(dc, lv)
	return &out, nil
}

// snapshotChunk is lvm2's default chunk size of copy-on-write snapshots (lvcreate -c).
const snapshotChunk = 4 << 10

// cowSize is the copy-on-write space that holds data bytes of changed origin data. The exception store
// also needs a header chunk and one metadata chunk per 256 data chunks (16 bytes per exception, plus a
// terminator): the sum lvm2 computes as the largest useful size (cow_max_size). A store of only data
// bytes invalidates the snapshot once that much of the origin has been rewritten.
func cowSize(data uint64) uint64 {
	chunks := (data + snapshotChunk - 1) / snapshotChunk
	const perMetadataChunk = snapshotChunk / 16
	metadata := (chunks + perMetadataChunk) / perMetadataChunk
	return (1 + metadata + chunks) * snapshotChunk
}
