//go:build guest

package nodeagent

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
	"github.com/lvm-operator/lvm-operator/internal/testing/umlguest"
	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

// Guest tests run inside a User-mode Linux guest as root with real lvm2, device-mapper and
// thin-provisioning-tools, on the disks in LVMS_GUEST_DISKS.

// TestGuestTransferSource copies LVs made by lvmd, opened by TransferSources, with transfer.Copy on
// real lvm2: a thin snapshot (deactivated first, as after a reboot: thin snapshots carry the
// activation-skip flag) of a 128 MiB thin volume with five scattered writes goes into a new thin
// volume, listed in batches of two ranges (three reads of the pool's metadata), and only its
// allocated chunks move; a thick volume goes whole into a thick volume holding other data; a
// copy-on-write snapshot of it has its origin's size. Each target reads the same as its source.
func TestGuestTransferSource(t *testing.T) {
	h, svc := tsGuestLVMD(t)
	meta := &tsCountingMeta{Reader: thinmeta.New(h)}
	ts := NewTransferSources(svc, meta)
	ts.batch = 2
	t.Run("thin snapshot", func(t *testing.T) { tsGuestThin(t, h, svc, ts, meta) })
	t.Run("thick", func(t *testing.T) { tsGuestThick(t, h, svc, ts) })
	held, err := meta.Held(t.Context(), thinmeta.Pool{VG: "gvg", Name: "pool"})
	if err != nil || held {
		t.Errorf("after the copies, the pool holds a metadata snapshot: %t, %v", held, err)
	}
}

func tsGuestThin(t *testing.T, h *exec.Host, svc *lvmd.Service, ts *TransferSources, meta *tsCountingMeta) {
	ctx := t.Context()
	size := uint64(128) << 20
	vol := tsCreate(t, svc, "vol", "thin", size)
	writes := []transfer.Range{{Offset: 0, Length: tsMiB}, {Offset: 5*tsMiB + 4096, Length: 256 << 10},
		{Offset: 40 * tsMiB, Length: 2 * tsMiB}, {Offset: 100 * tsMiB, Length: 64 << 10},
		{Offset: 127 * tsMiB, Length: tsMiB}}
	tsWrite(t, h, vol.Path, writes...)
	_, err := svc.CreateSnapshot(ctx, lvmd.SnapshotRequest{Name: "snap", DeviceClass: "thin", Source: "vol",
		ReadOnly: true})
	tsMust(t, err)
	_, err = exec.Run(ctx, h, "lvm", "lvchange", "-an", "gvg/snap")
	tsMust(t, err)
	if _, err := os.Stat("/dev/gvg/snap"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("device of the deactivated snapshot: %v, want it missing", err)
	}
	target := tsCreate(t, svc, "copy", "thin", size)

	src, err := ts.Open(ctx, transfer.Volume{Class: "thin", LV: "snap"})
	tsMust(t, err)
	defer func() { tsMust(t, src.Release()) }()
	meta.listings = 0
	p := tsCopy(t, src, target.Path)
	listings := meta.listings
	listed, err := listRanges(src)
	tsMust(t, err)
	var allocated uint64
	for _, r := range listed {
		allocated += r.Length
	}
	t.Logf("thin snapshot: %d of %d bytes copied, %d allocated in %d ranges %v, %d metadata reads",
		p.Bytes, src.Size, allocated, len(listed), listed, listings)
	if want := tsChunked(64<<10, writes); !slices.Equal(listed, want) {
		t.Errorf("allocated ranges %v, want the writes in 64 KiB chunks %v", listed, want)
	}
	if src.Size != size || p.Bytes != allocated || p.Bytes > size/16 || listings != 3 {
		t.Errorf("size %d, copied %d bytes in %d metadata reads; want size %d, %d bytes (< %d) in 3 reads",
			src.Size, p.Bytes, listings, size, allocated, size/16)
	}
	tsSameData(t, "/dev/gvg/snap", target.Path)
}

func tsGuestThick(t *testing.T, h *exec.Host, svc *lvmd.Service, ts *TransferSources) {
	ctx := t.Context()
	size := uint64(32) << 20
	vol := tsCreate(t, svc, "thick-vol", "thick", size)
	tsWrite(t, h, vol.Path, transfer.Range{Offset: 0, Length: 3 * tsMiB},
		transfer.Range{Offset: 20 * tsMiB, Length: tsMiB})
	target := tsCreate(t, svc, "thick-copy", "thick", size)
	tsWrite(t, h, target.Path, transfer.Range{Offset: 2 * tsMiB, Length: 4 * tsMiB},
		transfer.Range{Offset: 31 * tsMiB, Length: tsMiB})

	src, err := ts.Open(ctx, transfer.Volume{Class: "thick", LV: "thick-vol"})
	tsMust(t, err)
	defer func() { tsMust(t, src.Release()) }()
	p := tsCopy(t, src, target.Path)
	t.Logf("thick volume: %d of %d bytes copied", p.Bytes, src.Size)
	if src.Size != size || p.Bytes != size {
		t.Errorf("size %d, copied %d bytes; want %d and %d", src.Size, p.Bytes, size, size)
	}
	tsSameData(t, vol.Path, target.Path)

	cow, err := svc.CreateSnapshot(ctx, lvmd.SnapshotRequest{Name: "thick-snap", DeviceClass: "thick",
		Source: "thick-vol", ReadOnly: true, Size: 4 * tsMiB})
	tsMust(t, err)
	snap, err := ts.Open(ctx, transfer.Volume{Class: "thick", LV: "thick-snap"})
	tsMust(t, err)
	defer func() { tsMust(t, snap.Release()) }()
	t.Logf("copy-on-write snapshot: LV size %d, source size %d", cow.Size, snap.Size)
	if snap.Size != size {
		t.Errorf("copy-on-write snapshot of %d bytes opened with size %d", size, snap.Size)
	}
	tsSameData(t, vol.Path, cow.Path)
}

// tsCountingMeta counts the reads of allocated ranges.
type tsCountingMeta struct {
	*thinmeta.Reader
	listings int
}

func (m *tsCountingMeta) Allocated(ctx context.Context, lv thinmeta.Thin, fn func(thinmeta.Range) error) error {
	m.listings++
	return m.Reader.Allocated(ctx, lv, fn)
}

// tsCopy copies src into the device at path and checks that the copy completed.
func tsCopy(t *testing.T, src transfer.Source, path string) transfer.Progress {
	t.Helper()
	dst, err := os.OpenFile(path, os.O_RDWR, 0)
	tsMust(t, err)
	defer func() { tsMust(t, dst.Close()) }()
	p, err := transfer.Copy(t.Context(), src.Ranges, transfer.Progress{}, src.Dev, dst, transfer.Options{})
	if err != nil || !p.Complete {
		t.Fatalf("copy: %+v, %v", p, err)
	}
	return p
}

// tsSameData fails the test when the devices at a and b differ.
func tsSameData(t *testing.T, a, b string) {
	t.Helper()
	sa, sb := tsSum(t, a), tsSum(t, b)
	t.Logf("sha256 %s %x, %s %x", a, sa, b, sb)
	if sa != sb {
		t.Errorf("%s and %s differ", a, b)
	}
}

func tsSum(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	f, err := os.Open(path)
	tsMust(t, err)
	defer func() { _ = f.Close() }()
	s := sha256.New()
	if _, err := io.Copy(s, f); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return [sha256.Size]byte(s.Sum(nil))
}

// tsChunked rounds ranges out to whole chunks and merges them (rs in increasing order).
func tsChunked(chunk uint64, rs []transfer.Range) []transfer.Range {
	var out []transfer.Range
	for _, r := range rs {
		start, end := r.Offset/chunk*chunk, (r.End()+chunk-1)/chunk*chunk
		if n := len(out); n > 0 && start <= out[n-1].End() {
			out[n-1].Length = max(out[n-1].End(), end) - out[n-1].Offset
			continue
		}
		out = append(out, transfer.Range{Offset: start, Length: end - start})
	}
	return out
}

// tsWrite writes random data over the ranges (4 KiB aligned) with O_DIRECT dd.
func tsWrite(t *testing.T, h *exec.Host, dev string, rs ...transfer.Range) {
	t.Helper()
	for _, r := range rs {
		_, err := exec.Run(t.Context(), h, "dd", "if=/dev/urandom", "of="+dev, "bs=4096",
			fmt.Sprintf("seek=%d", r.Offset/4096), fmt.Sprintf("count=%d", r.Length/4096), "oflag=direct",
			"status=none")
		tsMust(t, err)
	}
}

func tsCreate(t *testing.T, svc *lvmd.Service, name, class string, size uint64) lvmd.LV {
	t.Helper()
	lv, err := svc.CreateLV(t.Context(), lvmd.CreateLVRequest{Name: name, DeviceClass: class, Size: size})
	tsMust(t, err)
	return lv
}

// tsGuestLVMD makes VG gvg on two guest disks with a 512 MiB thin pool of 64 KiB chunks, and an lvmd
// service with classes thin (the pool) and thick on it.
func tsGuestLVMD(t *testing.T) (*exec.Host, *lvmd.Service) {
	t.Helper()
	return tsGuestLVMDOn(t, 2, 512<<20)
}

// tsGuestLVMDOn is tsGuestLVMD on n guest disks with a thin pool of pool bytes.
func tsGuestLVMDOn(t *testing.T, n int, pool uint64) (*exec.Host, *lvmd.Service) {
	t.Helper()
	disks := umlguest.Disks(t, 0, n)
	h := exec.NewHost()
	c := lvm.New(h)
	ctx := t.Context()
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = exec.Run(cctx, h, "lvm", "vgremove", "-f", "-y", "gvg")
		_, _ = exec.Run(cctx, h, "lvm", append([]string{"pvremove", "-ff", "-y"}, disks...)...)
	})
	tsMust(t, c.CreateVG(ctx, "gvg", disks))
	vg, err := c.OwnedVG(ctx, "gvg")
	tsMust(t, err)
	tsMust(t, c.CreateThinPool(ctx, vg, lvm.ThinPoolOptions{Name: "pool", Size: pool, ChunkSize: 64 << 10,
		Zero: true}))
	spare := uint64(0)
	classes, err := lvmd.NewDeviceClassManager(&lvmd.Config{DeviceClasses: []lvmd.DeviceClass{
		{Name: "thin", VolumeGroup: "gvg", Type: lvmd.TypeThin, Default: true,
			ThinPool: &lvmd.ThinPoolConfig{Name: "pool", OverprovisionRatio: 10}},
		{Name: "thick", VolumeGroup: "gvg", SpareGB: &spare},
	}})
	tsMust(t, err)
	svc, err := lvmd.NewService(lvmd.Options{Executor: h, Classes: classes})
	tsMust(t, err)
	tsMust(t, svc.Refresh(ctx))
	return h, svc
}

func tsMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
