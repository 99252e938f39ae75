//go:build guest

package lvmd_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// TestGuestRemoveLVsTogether proves on real lvm2 what the batched removal relies on: one lvremove
// of several LVs goes on past an LV it cannot remove (open, or missing) and fails at the end; and
// that lvmd removes the LVs queued behind a running lvremove with one more command, zeroing the
// thick ones first, with a cache that matches lvm2 after.
func TestGuestRemoveLVsTogether(t *testing.T) {
	g := newGuestEnv(t)
	ctx := t.Context()
	vg, err := g.lvm.OwnedVG(ctx, "gvg")
	g.must(err)
	for _, n := range []string{"r1", "r2", "r3"} {
		_, err := g.svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: n, DeviceClass: "thin", Size: 64 * mib})
		g.must(err)
	}
	open, err := os.Open("/dev/gvg/r2")
	g.must(err)
	err = g.lvm.RemoveLVs(ctx, vg, []string{"r1", "r2", "missing", "r3"})
	t.Logf("lvremove r1 r2(open) missing r3: %v", err)
	if err == nil {
		t.Fatal("lvremove of an open LV and a missing one succeeded")
	}
	st := g.state()
	for n, want := range map[string]bool{"r1": false, "r2": true, "r3": false} {
		if _, ok := st.LV("gvg", n); ok != want {
			t.Errorf("after the failed lvremove, LV %s exists = %v, want %v", n, ok, want)
		}
	}
	g.must(open.Close())
	g.must(g.svc.Refresh(ctx))
	g.must(g.svc.RemoveLV(ctx, "r2", "thin"))

	// Through the service: one thin and one thick removal held in lvm2, the rest queued behind it.
	h := newHold(g.host)
	classes, err := lvmd.NewDeviceClassManager(g.cfg)
	g.must(err)
	svc, err := lvmd.NewService(lvmd.Options{Executor: h, Classes: classes})
	g.must(err)
	var names []string
	classOf := map[string]string{}
	for i := range 6 {
		class := "thin"
		if i%2 == 1 {
			class = "thick"
		}
		name := fmt.Sprintf("%s%d", class, i)
		_, err := svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: name, DeviceClass: class, Size: 64 * mib})
		g.must(err)
		names = append(names, name)
		classOf[name] = class
	}
	removes := g.host.Counter().Count(lvm.Command)
	start := time.Now()
	// Thin and thick classes share VG gvg, so all six go through the same queue.
	errs := removeTogether(t, svc, h, "gvg", classOf, names...)
	t.Logf("TIMING 6 removals (3 thick zeroed), two lvremoves: %v", time.Since(start).Round(time.Millisecond))
	for n, err := range errs {
		if err != nil {
			t.Errorf("RemoveLV(%s) = %v", n, err)
		}
	}
	if n := g.host.Counter().Count(lvm.Command) - removes; n != 2 {
		t.Errorf("6 removals ran lvm %d times, want 2 (one held, then the five queued behind it)", n)
	}
	st = g.state()
	for _, n := range names {
		if _, ok := st.LV("gvg", n); ok {
			t.Errorf("LV %s still exists", n)
		}
	}
	left, err := svc.ListLVs(ctx, "thick")
	g.must(err)
	if len(left) != 0 {
		t.Errorf("cache still lists %v", left)
	}
	g.svc = svc
	g.checkCapacity("after the batched removals")
}

// TestGuestArchiveStaysBounded: lvm2 archives a VG's metadata before each change (30 days by
// default); the service's changes leave at most lvm.ArchiveKeep archives of the VG, and a change
// made without the bound (plain lvm2) adds more, so the count is the bound's doing.
func TestGuestArchiveStaysBounded(t *testing.T) {
	g := newGuestEnv(t)
	ctx := t.Context()
	archives := func() int {
		files, err := filepath.Glob("/etc/lvm/archive/gvg_*.vg")
		g.must(err)
		return len(files)
	}
	for i := range 2 * lvm.ArchiveKeep {
		name := fmt.Sprintf("a%d", i)
		_, err := g.svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: name, DeviceClass: "thin", Size: 8 * mib})
		g.must(err)
		g.must(g.svc.RemoveLV(ctx, name, "thin"))
	}
	n := archives()
	t.Logf("archives of gvg after %d changes: %d", 4*lvm.ArchiveKeep, n)
	if n == 0 || n > lvm.ArchiveKeep {
		t.Errorf("%d archives of gvg, want 1 to %d", n, lvm.ArchiveKeep)
	}
	_, err := exec.Run(ctx, g.host, "lvm", "lvcreate", "-y", "-n", "plain", "-V", "8m", "--thinpool", "pool", "gvg")
	g.must(err)
	after := archives()
	t.Logf("archives of gvg after a plain lvcreate: %d", after)
	if after <= n {
		t.Errorf("a plain lvcreate left %d archives (from %d), want more: lvm2 did not archive it", after, n)
	}
}
