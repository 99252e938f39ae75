package lvmd_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvm/lvmtest"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// ddExec runs dd itself (recording the command lines) and every lvm command on the fake.
type ddExec struct {
	*lvmtest.LVM
	dd   []string
	fail error // returned by the next dd
}

func (d *ddExec) Exec(ctx context.Context, c exec.Cmd) error {
	if c.Name != "dd" {
		return d.LVM.Exec(ctx, c)
	}
	d.dd = append(d.dd, c.String())
	err := d.fail
	d.fail = nil
	return err
}

// TestRestoreThickSnapshotCopies: lvm2 cannot snapshot a thick copy-on-write snapshot, so restoring one
// (a writable snapshot of it) copies its device into a new LV that takes the volume's name only once
// the copy is complete; a failed copy leaves no LV of that name and the retry completes it.
func TestRestoreThickSnapshotCopies(t *testing.T) {
	f := lvmtest.New()
	f.AddVG("vg", 10*gib, extent, lvm.Tag)
	ex := &ddExec{LVM: f}
	svc := serviceOn(t, ex)
	ctx := t.Context()
	if _, err := svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "vol", DeviceClass: "thick", Size: gib}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateSnapshot(
		ctx,
		lvmd.SnapshotRequest{Name: "snap", DeviceClass: "thick", Source: "vol", Size: gib, ReadOnly: true},
	); err != nil {
		t.Fatal(err)
	}
	restore := lvmd.SnapshotRequest{Name: "new-vol", DeviceClass: "thick", Source: "snap", Size: gib}

	ex.fail = errors.New("dd: error writing: Input/output error")
	if _, err := svc.CreateSnapshot(ctx, restore); err == nil {
		t.Fatal("restore with a failing copy succeeded")
	}
	if _, err := svc.GetLV(ctx, "new-vol", "thick"); !errors.Is(err, lvmd.ErrNotFound) {
		t.Fatalf("after a failed copy GetLV(new-vol) = %v, want ErrNotFound", err)
	}

	reads := f.Count("fullreport")
	lv, err := svc.CreateSnapshot(ctx, restore)
	if err != nil {
		t.Fatalf("retried restore: %v", err)
	}
	// The create and the rename are applied to the cache: the restore reads no state.
	if n := f.Count("fullreport") - reads; n != 0 {
		t.Errorf("the retried restore read the state %d times, want 0", n)
	}
	if lv.Name != "new-vol" || lv.Origin != "" || lv.ReadOnly || lv.Size != gib ||
		!slices.Contains(lv.Tags, "lvms.restored-from=snap") {
		t.Errorf("restored LV %+v, want a writable plain LV new-vol of 1 GiB tagged lvms.restored-from=snap", lv)
	}
	wantDD := "dd if=/dev/mapper/vg-snap of=/dev/mapper/vg-new--vol--restoring bs=1M skip=0 seek=0 count=1073741824 " +
		"iflag=direct,skip_bytes,count_bytes oflag=direct,seek_bytes conv=fsync,notrunc status=none"
	if len(ex.dd) != 2 || ex.dd[1] != wantDD {
		t.Errorf("dd runs %q, want two, the last %q", ex.dd, wantDD)
	}
	if _, err := svc.CreateSnapshot(ctx, restore); err != nil || len(ex.dd) != 2 {
		t.Errorf("repeated restore: %v after %d copies, want the LV without another copy", err, len(ex.dd))
	}
	lvs, err := svc.ListLVs(ctx, "thick")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lvs {
		if strings.HasSuffix(l.Name, "-restoring") {
			t.Errorf("LV %s left behind", l.Name)
		}
	}
	// A read-only snapshot of a snapshot is still refused.
	ro := lvmd.SnapshotRequest{Name: "snap2", DeviceClass: "thick", Source: "snap", Size: gib, ReadOnly: true}
	if _, err := svc.CreateSnapshot(ctx, ro); !errors.Is(err, lvmd.ErrInvalidArgument) {
		t.Errorf("snapshot of a snapshot: %v, want ErrInvalidArgument", err)
	}
}

// TestCloneThickVolumeCopies: a clone of a live thick LV (a writable snapshot of it) is a full copy
// of a read-only snapshot of the source taken for it (the image): the copy reads the image, the image
// is removed before the copy takes the volume's name, and a failed copy leaves neither the image nor
// an LV of that name; the retry completes it and a repeated request returns it.
func TestCloneThickVolumeCopies(t *testing.T) {
	f := lvmtest.New()
	f.AddVG("vg", 10*gib, extent, lvm.Tag)
	ex := &ddExec{LVM: f}
	svc := serviceOn(t, ex)
	ctx := t.Context()
	if _, err := svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "vol", DeviceClass: "thick", Size: gib}); err != nil {
		t.Fatal(err)
	}
	clone := lvmd.SnapshotRequest{Name: "copy", DeviceClass: "thick", Source: "vol", Size: 2 * gib}
	names := func() []string {
		t.Helper()
		lvs, err := svc.ListLVs(ctx, "thick")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range lvs {
			out = append(out, l.Name)
		}
		slices.Sort(out)
		return out
	}

	ex.fail = errors.New("dd: error reading: Input/output error")
	if _, err := svc.CreateSnapshot(ctx, clone); err == nil {
		t.Fatal("clone with a failing copy succeeded")
	}
	if got, want := names(), []string{"copy-restoring", "vol"}; !slices.Equal(got, want) {
		t.Errorf("after a failed copy: LVs %q, want %q (no image, no LV named copy)", got, want)
	}
	lv, err := svc.CreateSnapshot(ctx, clone)
	if err != nil {
		t.Fatalf("retried clone: %v", err)
	}
	if lv.Name != "copy" || lv.Origin != "" || lv.ReadOnly || lv.Size != 2*gib ||
		!slices.Contains(lv.Tags, "lvms.restored-from=vol") {
		t.Errorf("clone %+v, want a writable plain LV copy of 2 GiB tagged lvms.restored-from=vol", lv)
	}
	if got, want := names(), []string{"copy", "vol"}; !slices.Equal(got, want) {
		t.Errorf("after the clone: LVs %q, want %q", got, want)
	}
	wantDD := "dd if=/dev/mapper/vg-copy--image of=/dev/mapper/vg-copy--restoring bs=1M skip=0 seek=0 " +
		"count=1073741824 iflag=direct,skip_bytes,count_bytes oflag=direct,seek_bytes conv=fsync,notrunc status=none"
	if len(ex.dd) != 2 || ex.dd[1] != wantDD {
		t.Errorf("dd runs %q, want two, the last %q", ex.dd, wantDD)
	}
	if _, err := svc.CreateSnapshot(ctx, clone); err != nil || len(ex.dd) != 2 {
		t.Errorf("repeated clone: %v after %d copies, want the LV without another copy", err, len(ex.dd))
	}
	// A clone interrupted by a crash left its image (a snapshot of the source) and its -restoring
	// LV, and was then abandoned: removing its volume removes them, so the source can go.
	if _, err := svc.CreateSnapshot(ctx, lvmd.SnapshotRequest{Name: "gone-image", DeviceClass: "thick",
		Source: "vol", Size: gib, ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateLV(
		ctx,
		lvmd.CreateLVRequest{Name: "gone-restoring", DeviceClass: "thick", Size: gib},
	); err != nil {
		t.Fatal(err)
	}
	if err := svc.RemoveLV(ctx, "gone", "thick"); err != nil {
		t.Errorf("remove the abandoned clone: %v", err)
	}
	// The source can be removed: the clone does not depend on it.
	if err := svc.RemoveLV(ctx, "vol", "thick"); err != nil {
		t.Errorf("remove the source after its clone: %v", err)
	}
	if got, want := names(), []string{"copy"}; !slices.Equal(got, want) {
		t.Errorf("LVs %q, want %q", got, want)
	}
}
