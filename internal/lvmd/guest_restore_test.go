//go:build guest

package lvmd_test

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// TestGuestRestoreThickSnapshot: restoring a thick copy-on-write snapshot yields the data of the moment
// the snapshot was taken, although the origin was overwritten since.
func TestGuestRestoreThickSnapshot(t *testing.T) {
	g := newGuestEnv(t)
	ctx := t.Context()
	const size = 16 << 20
	orig, err := g.svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "orig", DeviceClass: "thick", Size: size})
	g.must(err)
	g.must(fill(orig.Path, 'A', size))
	_, err = g.svc.CreateSnapshot(
		ctx,
		lvmd.SnapshotRequest{Name: "snap", DeviceClass: "thick", Source: "orig", Size: size, ReadOnly: true},
	)
	g.must(err)
	g.must(fill(orig.Path, 'B', size))

	restored, err := g.svc.CreateSnapshot(
		ctx,
		lvmd.SnapshotRequest{Name: "restored", DeviceClass: "thick", Source: "snap", Size: size},
	)
	g.must(err)
	if restored.Origin != "" || restored.ReadOnly {
		t.Errorf("restored LV %+v, want a plain writable LV", restored)
	}
	data, err := readAll(restored.Path, size)
	g.must(err)
	if !bytes.Equal(data, bytes.Repeat([]byte{'A'}, size)) {
		t.Errorf("restored LV does not hold the snapshot's data (first bytes %q)", data[:16])
	}
	s := g.state()
	if _, ok := s.LV("gvg", "restored"+"-restoring"); ok {
		t.Error("the temporary -restoring LV is left behind")
	}
	for _, name := range []string{"restored", "snap", "orig"} {
		g.must(g.svc.RemoveLV(ctx, name, "thick"))
	}
}

// TestGuestCloneThickVolume: a clone of a live thick LV is a plain LV of its own with the source's
// data, copied from a snapshot that is gone once the clone is made; it outlives its source.
func TestGuestCloneThickVolume(t *testing.T) {
	g := newGuestEnv(t)
	ctx := t.Context()
	const size = 16 << 20
	orig, err := g.svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "orig", DeviceClass: "thick", Size: size})
	g.must(err)
	g.must(fill(orig.Path, 'A', size))
	clone, err := g.svc.CreateSnapshot(ctx, lvmd.SnapshotRequest{Name: "clone", DeviceClass: "thick",
		Source: "orig", Size: 2 * size})
	g.must(err)
	s := g.state()
	lv, ok := s.LV("gvg", "clone")
	if !ok || clone.Origin != "" || clone.ReadOnly || lv.Attr.IsSnapshot() || lv.Size != 2*size {
		t.Errorf("clone %+v (lvm2: %+v), want a plain writable LV of 32 MiB", clone, lv)
	}
	for _, name := range []string{"clone-image", "clone-restoring"} {
		if _, ok := s.LV("gvg", name); ok {
			t.Errorf("LV %s is left behind", name)
		}
	}
	g.must(fill(orig.Path, 'B', size))
	g.must(g.svc.RemoveLV(ctx, "orig", "thick"))
	data, err := readAll(clone.Path, size)
	g.must(err)
	if !bytes.Equal(data, bytes.Repeat([]byte{'A'}, size)) {
		t.Errorf("the clone does not hold the source's data of its time (first bytes %q)", data[:16])
	}
	g.must(g.svc.RemoveLV(ctx, "clone", "thick"))
}

func fill(dev string, b byte, n int) error { return write(dev, bytes.Repeat([]byte{b}, n)) }

// write writes data to the start of dev, synced.
func write(dev string, data []byte) error {
	f, err := os.OpenFile(dev, os.O_WRONLY|os.O_SYNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func readAll(dev string, n int) ([]byte, error) {
	f, err := os.Open(dev)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, n)
	_, err = io.ReadFull(f, buf)
	return buf, err
}
