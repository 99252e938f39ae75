//go:build guest

package lvm_test

import (
	"strings"
	"testing"
)

// TestGuestSignatureAfterThePlanIsNotWiped: the device filter found the disks blank, then a
// filesystem appeared on them (another process formatted the disk between the plan and the write).
// pvcreate, vgcreate and vgextend must not answer lvm2's "Wipe it?" with yes: each fails, and the
// filesystem is still there. A blank disk is still taken without a question.
func TestGuestSignatureAfterThePlanIsNotWiped(t *testing.T) {
	g := newGuest(t)
	ctx := t.Context()
	disks := guestDisks(t, 3)
	vg := g.vgOn("gsig", disks[0])
	for _, d := range disks[1:] {
		g.sh("mkfs.ext4", "-q", "-F", d)
	}
	ops := map[string]func() error{
		"pvcreate": func() error { return g.lvm.CreatePVs(ctx, disks[1]) },
		"vgcreate": func() error { return g.lvm.CreateVG(ctx, "gsignew", []string{disks[1]}) },
		"vgextend": func() error { return g.lvm.ExtendVG(ctx, vg, disks[2]) },
	}
	for name, op := range ops {
		err := op()
		if err == nil {
			t.Errorf("%s on a disk with an ext4 signature succeeded", name)
		}
		t.Logf("%s refused: %v", name, err)
	}
	for _, d := range disks[1:] {
		if out := g.sh("blkid", "-p", "-o", "value", "-s", "TYPE", d); strings.TrimSpace(out) != "ext4" {
			t.Errorf("%s holds %q after the refused commands, want its ext4", d, out)
		}
	}
	if pvs := g.state().PVsOf("gsig"); len(pvs) != 1 {
		t.Errorf("VG gsig has PVs %v, want its first disk only", pvs)
	}
	if _, ok := g.state().VG("gsignew"); ok {
		t.Error("VG gsignew was created")
	}
	g.cleanupDisks("gsignew", disks[1:]...)
}
