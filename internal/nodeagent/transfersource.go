package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

// DefaultTransferBatch is how many allocated ranges of a thin LV one read of the pool's metadata
// lists for a transfer.
const DefaultTransferBatch = 16384

// ThinAllocations reads the allocated ranges of thin LVs from their pool's metadata;
// *thinmeta.Reader implements it.
type ThinAllocations interface {
	Lookup(ctx context.Context, vg string, names ...string) ([]thinmeta.Thin, error)
	Allocated(ctx context.Context, lv thinmeta.Thin, fn func(thinmeta.Range) error) error
}

// transferDevice is an LV's device opened for reading; *os.File implements it.
type transferDevice interface {
	io.ReaderAt
	io.Seeker
	io.Closer
}

// TransferSources opens the source LVs of transfers on this node (its Open is a transfer.OpenFunc):
// only LVs lvmd made, in this node's device classes. It does not take a snapshot or otherwise make
// the data consistent: the caller (the operator, which names a read-only snapshot or a volume no
// pod writes) does.
type TransferSources struct {
	vols *Volumes
	meta ThinAllocations
	// batch is the most ranges one read of a pool's metadata lists.
	batch int
	// open opens a device node read-only.
	open func(path string) (transferDevice, error)
}

// NewTransferSources returns TransferSources over lvmd's LVs (activated through lvmd when their
// device node is missing, see Activator) and the thin pools' metadata.
func NewTransferSources(lvs LVSource, meta ThinAllocations) *TransferSources {
	return &TransferSources{vols: NewVolumes(lvs), meta: meta, batch: DefaultTransferBatch, open: openReadOnly}
}

func openReadOnly(path string) (transferDevice, error) {
	return os.OpenFile(path, os.O_RDONLY, 0)
}

// Open opens LV v.LV of device class v.Class (any class for "") read-only. Its Ranges are the whole device for a thick LV, the
// allocated ranges for a thin one; its Size is the size of the device (for a copy-on-write
// snapshot, that of its origin). An LV that lvmd did not make or that is in another class is
// transfer.ErrNotFound like a missing one.
func (t *TransferSources) Open(ctx context.Context, v transfer.Volume) (transfer.Source, error) {
	lv, found, err := t.vols.FindLV(ctx, v.LV)
	switch {
	case err != nil:
		return transfer.Source{}, fmt.Errorf("open transfer source %s/%s: %w", v.Class, v.LV, err)
	case !found:
		return transfer.Source{}, fmt.Errorf("LV %s/%s: %w", v.Class, v.LV, transfer.ErrNotFound)
	case v.Class != "" && lv.DeviceClass != v.Class:
		return transfer.Source{}, fmt.Errorf("LV %s/%s: %w (LV %s is in device class %s)",
			v.Class, v.LV, transfer.ErrNotFound, lv.Name, lv.DeviceClass)
	}
	var thin *thinmeta.Thin
	if lv.ThinPool != "" {
		thins, err := t.meta.Lookup(ctx, lv.VolumeGroup, lv.Name)
		if errors.Is(err, thinmeta.ErrNotFound) {
			err = fmt.Errorf("%w: %w", transfer.ErrNotFound, err)
		}
		if err != nil {
			return transfer.Source{}, fmt.Errorf("open transfer source %s/%s: %w", v.Class, v.LV, err)
		}
		thin = &thins[0]
	}
	if err := t.vols.ensureDevice(ctx, lv); err != nil {
		return transfer.Source{}, fmt.Errorf("open transfer source %s/%s: %w", v.Class, v.LV, err)
	}
	dev, err := t.open(lv.Path)
	if err != nil {
		return transfer.Source{}, fmt.Errorf("open transfer source %s/%s: %w", v.Class, v.LV, err)
	}
	end, err := dev.Seek(0, io.SeekEnd)
	if err != nil {
		return transfer.Source{}, errors.Join(fmt.Errorf("size of %s: %w", lv.Path, err), dev.Close())
	}
	src := transfer.Source{Ranges: transfer.Whole(uint64(end)), Size: uint64(end), Dev: dev, Release: dev.Close}
	if thin != nil {
		src.Ranges = t.allocated(ctx, *thin)
	}
	return src, nil
}

// allocated lists the allocated ranges of lv in batches of at most t.batch: each batch is one read
// of the pool's metadata, ended early after the batch is full and handed to fn only after that read
// (so the pool's metadata snapshot is not held while fn waits for a slow network), the next read
// going on from the end of the batch's last range.
func (t *TransferSources) allocated(ctx context.Context, lv thinmeta.Thin) transfer.Ranges {
	return func(fn func(transfer.Range) error) error {
		limit := max(t.batch, 1)
		batch := make([]thinmeta.Range, 0, min(limit, 1024))
		for from := uint64(0); ; {
			batch = batch[:0]
			// Offsets are cut exactly at from (block size 0): from is the end of a range handed on
			// already, so no byte is listed twice even were adjacent ranges not merged.
			err := t.meta.Allocated(ctx, lv, thinmeta.StartingAt(from, 0, func(r thinmeta.Range) error {
				batch = append(batch, r)
				if len(batch) == limit {
					return thinmeta.ErrStop
				}
				return nil
			}))
			if err != nil {
				return fmt.Errorf("list allocated ranges of %s from %d: %w", lv, from, err)
			}
			for _, r := range batch {
				if err := fn(r); err != nil {
					return err
				}
			}
			if len(batch) < limit {
				return nil
			}
			from = batch[len(batch)-1].End()
		}
	}
}
