package lvmd_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvm/lvmtest"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// diskModel runs lvm, blockdev and blkdiscard on the fake and plays dd, and models a disk of a
// fixed rate: a blkdiscard or dd command takes its bytes / rate, and one that would run past the
// deadline is killed, as exec.Host kills a command after exec.DefaultTimeout. It records the byte
// ranges each device received.
type diskModel struct {
	*lvmtest.LVM
	rate     uint64 // bytes per second
	deadline time.Duration
	written  map[string][][2]uint64
}

func (d *diskModel) Exec(ctx context.Context, c exec.Cmd) error {
	var dev, sizeOf string
	var off, n uint64
	flag := func(name string) (uint64, bool) {
		for i, a := range c.Args {
			if v, ok := strings.CutPrefix(a, name+"="); ok {
				u, _ := strconv.ParseUint(v, 10, 64)
				return u, true
			} else if a == "--"+name && i+1 < len(c.Args) {
				u, _ := strconv.ParseUint(c.Args[i+1], 10, 64)
				return u, true
			}
		}
		return 0, false
	}
	switch c.Name {
	case "blkdiscard":
		dev = c.Args[len(c.Args)-1]
		sizeOf = dev
		off, _ = flag("offset")
		n, _ = flag("length")
		if err := d.LVM.Exec(ctx, c); err != nil {
			return err
		}
	case "dd":
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "of="); ok {
				dev = v
			} else if v, ok := strings.CutPrefix(a, "if="); ok {
				sizeOf = v
			}
		}
		off, _ = flag("seek")
		n, _ = flag("count")
	default:
		return d.LVM.Exec(ctx, c)
	}
	if n == 0 { // the whole device, as the commands did before they ran in chunks
		out, err := exec.Run(ctx, d.LVM, "blockdev", "--getsize64", sizeOf)
		if err != nil {
			return err
		}
		n, _ = strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
	}
	if took := time.Duration(n/d.rate) * time.Second; took > d.deadline {
		return &exec.Error{Cmd: c.Name, Args: c.Args, ExitCode: -1,
			Err: fmt.Errorf("%w: %s ran longer than %s", exec.ErrTimeout, c.Name, d.deadline)}
	}
	d.written[dev] = append(d.written[dev], [2]uint64{off, off + n})
	return nil
}

// covered fails unless ranges cover [0, size) exactly, in order, each at most chunk bytes.
func covered(ranges [][2]uint64, size, chunk uint64) error {
	var next uint64
	for _, r := range ranges {
		if r[0] != next || r[1]-r[0] > chunk {
			return fmt.Errorf("range %v after %d (chunk %d)", r, next, chunk)
		}
		next = r[1]
	}
	if next != size {
		return fmt.Errorf("ranges end at %d, want %d", next, size)
	}
	return nil
}

// TestLargeThickVolumesDeleteAndRestore: a 200 GiB thick volume on a disk of 300 MB/s takes 716 s
// to zero or copy, past the 5-minute deadline of one host command (a single blkdiscard or dd over
// it is killed, and was retried from the start for ever). Deleting it, deleting its snapshot and
// restoring the snapshot all complete, in commands that each stay within the deadline and that
// together cover every byte once.
func TestLargeThickVolumesDeleteAndRestore(t *testing.T) {
	const size = 200 * gib
	f := lvmtest.New()
	f.AddVG("vg", 700*gib, extent, lvm.Tag)
	disk := &diskModel{LVM: f, rate: 300e6, deadline: exec.DefaultTimeout, written: map[string][][2]uint64{}}
	svc := serviceOn(t, disk)
	ctx := t.Context()
	if _, err := svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "big", DeviceClass: "thick", Size: size}); err != nil {
		t.Fatal(err)
	}
	// The model is true to the old commands: one over the whole volume is killed.
	err := disk.Exec(ctx, exec.Cmd{Name: "blkdiscard", Args: []string{"--zeroout", "/dev/vg/big"}})
	if !errors.Is(err, exec.ErrTimeout) {
		t.Fatalf("one blkdiscard over 200 GiB at 300 MB/s: %v, want killed at the deadline", err)
	}
	disk.written = map[string][][2]uint64{}

	snap := lvmd.SnapshotRequest{Name: "snap", DeviceClass: "thick", Source: "big", Size: 50 * gib, ReadOnly: true}
	snapLV, err := svc.CreateSnapshot(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	restore := lvmd.SnapshotRequest{Name: "restored", DeviceClass: "thick", Source: "snap", Size: size}
	if _, err := svc.CreateSnapshot(ctx, restore); err != nil {
		t.Fatalf("restore of a 200 GiB snapshot: %v", err)
	}
	if err := covered(disk.written["/dev/mapper/vg-restored--restoring"], size, lvmd.DefaultChunkBytes); err != nil {
		t.Errorf("the restore's copy: %v", err)
	}
	for _, lv := range []string{"snap", "big"} {
		if err := svc.RemoveLV(ctx, lv, "thick"); err != nil {
			t.Fatalf("delete %s: %v", lv, err)
		}
	}
	if err := covered(disk.written["/dev/vg/big"], size, lvmd.DefaultChunkBytes); err != nil {
		t.Errorf("zeroing of the 200 GiB volume: %v", err)
	}
	// lvm2 makes a COW store a little larger than asked, for its own metadata.
	if err := covered(disk.written["/dev/mapper/vg-snap-cow"], snapLV.Size, lvmd.DefaultChunkBytes); err != nil {
		t.Errorf("zeroing of the snapshot's COW store: %v", err)
	}
	if lvs, _ := svc.ListLVs(ctx, "thick"); slices.ContainsFunc(lvs, func(l lvmd.LV) bool { return l.Name == "big" }) {
		t.Error("the 200 GiB volume is still there")
	}
}
