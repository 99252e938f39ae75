//go:build guest

package lvmd_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
	"github.com/lvm-operator/lvm-operator/internal/testing/umlguest"
)

// TestGuestRAIDCapacity proves on real lvm2 that a RAID class's capacity is the largest
// LV lvcreate can allocate with the class's options: lvm2 refuses an LV one extent
// larger, lvmd creates one of exactly the capacity, and then nothing is left.
func TestGuestRAIDCapacity(t *testing.T) {
	tests := []struct {
		name string
		raid lvmd.RAIDConfig
		// fill[i] bytes of disk i are taken by a linear LV first, so the PVs' free
		// space differs.
		fill []uint64
	}{
		{name: "raid1 on two disks", raid: lvmd.RAIDConfig{Type: lvm.RAID1, Mirrors: 1}, fill: []uint64{0, 0}},
		{
			name: "raid1 on three unequal disks",
			raid: lvmd.RAIDConfig{Type: lvm.RAID1, Mirrors: 1},
			fill: []uint64{1536 * mib, gib, 0},
		},
		{name: "raid5 on three disks", raid: lvmd.RAIDConfig{Type: lvm.RAID5, Stripes: 2}, fill: []uint64{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testGuestRAIDCapacity(t, tt.raid, tt.fill)
		})
	}
}

func testGuestRAIDCapacity(t *testing.T, raid lvmd.RAIDConfig, fill []uint64) {
	ctx := t.Context()
	h := exec.NewHost()
	client := lvm.New(h)
	disks := raidGuestDisks(t, h, len(fill))
	run := func(args ...string) {
		t.Helper()
		if _, err := exec.Run(ctx, h, lvm.Command, args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.CreateVG(ctx, "rvg", disks); err != nil {
		t.Fatal(err)
	}
	for i, n := range fill {
		if n > 0 {
			run("lvcreate", "-y", "-n", fmt.Sprintf("fill%d", i), "-L", fmt.Sprintf("%db", n), "rvg", disks[i])
		}
	}
	classes, err := lvmd.NewDeviceClassManager(&lvmd.Config{DeviceClasses: []lvmd.DeviceClass{
		{Name: "raid", VolumeGroup: "rvg", Default: true, SpareGB: ptr(uint64(0)), RAID: &raid},
	}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lvmd.NewService(lvmd.Options{Executor: h, Classes: classes})
	if err != nil {
		t.Fatal(err)
	}
	c, err := svc.Capacity(ctx, "raid")
	if err != nil {
		t.Fatal(err)
	}
	vg, err := client.OwnedVG(ctx, "rvg")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CAPACITY %s: PVs free %s, VG free %d extents; lvmd capacity %d bytes = %d extents",
		raid.Type, pvFree(t, client, vg), vg.FreeCount, c.FreeBytes, c.FreeBytes/vg.ExtentSize)
	if c.FreeBytes == 0 || c.FreeBytes%vg.ExtentSize != 0 {
		t.Fatalf("capacity %d is not a positive number of extents", c.FreeBytes)
	}

	// lvm2 itself, without lvmd's check, refuses one extent more.
	if err := client.CreateLV(ctx, vg, raidLV("over", c.FreeBytes+vg.ExtentSize, raid)); !lvm.IsInsufficientSpace(err) {
		t.Fatalf("lvcreate of capacity + 1 extent: %v, want insufficient space", err)
	}
	lv, err := svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "max", DeviceClass: "raid", Size: c.FreeBytes})
	if err != nil {
		t.Fatalf("create LV of exactly the capacity %d: %v", c.FreeBytes, err)
	}
	t.Logf("CREATED %s of %d bytes; PVs free %s", lv.Name, lv.Size, pvFree(t, client, vg))
	if lv.Size != c.FreeBytes {
		t.Errorf("LV size %d, want %d", lv.Size, c.FreeBytes)
	}
	checkRAIDLeft(t, svc, client, vg, raid)
	if err := svc.RemoveLV(ctx, "max", "raid"); err != nil {
		t.Fatal(err)
	}
}

// checkRAIDLeft checks that nothing is left for the class, in lvmd's cache and after a
// fresh read, and that lvm2 cannot create even a one-extent RAID LV.
func checkRAIDLeft(t *testing.T, svc *lvmd.Service, client *lvm.Client, vg lvm.VG, raid lvmd.RAIDConfig) {
	t.Helper()
	ctx := t.Context()
	cached, err := svc.Capacity(ctx, "raid")
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	fresh, err := svc.Capacity(ctx, "raid")
	if err != nil {
		t.Fatal(err)
	}
	if cached.FreeBytes != 0 || fresh.FreeBytes != 0 {
		t.Errorf("capacity after the max create: cached %d, fresh %d, want 0", cached.FreeBytes, fresh.FreeBytes)
	}
	if err := client.CreateLV(ctx, vg, raidLV("one", vg.ExtentSize, raid)); !lvm.IsInsufficientSpace(err) {
		t.Errorf("lvcreate of one extent after the max create: %v, want insufficient space", err)
	}
}

// raidLV returns the options of a RAID LV with the class's RAID settings, for lvcreate
// without lvmd.
func raidLV(name string, size uint64, raid lvmd.RAIDConfig) lvm.LVOptions {
	return lvm.LVOptions{Name: name, Size: size, RAID: raid.Type, Mirrors: raid.Mirrors, Stripes: raid.Stripes}
}

// raidGuestDisks returns n guest disks (from the third on, after the ones other tests
// use) and removes the VG rvg and their PV labels when the test ends.
func raidGuestDisks(t *testing.T, h *exec.Host, n int) []string {
	t.Helper()
	disks := umlguest.Disks(t, 2, n)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = exec.Run(ctx, h, lvm.Command, "vgremove", "-f", "-y", "rvg")
		_, _ = exec.Run(ctx, h, lvm.Command, append([]string{"pvremove", "-ff", "-y"}, disks...)...)
		_, _ = exec.Run(ctx, h, "wipefs", append([]string{"--all", "--force"}, disks...)...)
	})
	return disks
}

// pvFree returns the free extents of the VG's PVs, e.g. "[/dev/ubdc:511 /dev/ubdd:511]".
func pvFree(t *testing.T, client *lvm.Client, vg lvm.VG) string {
	t.Helper()
	s, err := client.State(t.Context(), vg.Name)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, pv := range s.PVsOf(vg.Name) {
		out = append(out, fmt.Sprintf("%s:%d", pv.Name, pv.Free/vg.ExtentSize))
	}
	return "[" + strings.Join(out, " ") + "]"
}
