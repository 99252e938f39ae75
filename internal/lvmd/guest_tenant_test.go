//go:build guest

package lvmd_test

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

const tenantMarker = "LVMS-PREVIOUS-TENANT-SECRET"

// TestGuestNoDataAcrossTenants: a volume is filled with a marker and deleted, and a new volume of the
// same size is created in the same class; the new volume must not show the marker.
//   - thick: lvmd zeroes a thick LV before lvremove. The test first checks that the new LV sits on the
//     very extents of the old one, or it would prove nothing.
//   - thin: the pool zeroes every chunk it provisions (-Z y); a thin LV reads zeroes where nothing was
//     written, so the new tenant writes 4 KiB at the head of every chunk and reads the rest of it. The
//     pool is small, so most of those chunks must be the old tenant's; and a control run with the
//     pool's zeroing off must show the marker, or the check could not fail.
func TestGuestNoDataAcrossTenants(t *testing.T) {
	g := newGuestEnv(t)
	ctx := t.Context()

	t.Run("thick", func(t *testing.T) { g.thickTenantSwap(t, g.svc) })

	vg, err := g.lvm.OwnedVG(ctx, "gvg")
	g.must(err)
	g.must(g.lvm.CreateThinPool(ctx, vg, lvm.ThinPoolOptions{Name: "tenantpool", Size: 64 * mib, Zero: true}))
	classes, err := lvmd.NewDeviceClassManager(&lvmd.Config{DeviceClasses: []lvmd.DeviceClass{{
		Name: "tenantthin", VolumeGroup: "gvg", Default: true, Type: lvmd.TypeThin,
		ThinPool: &lvmd.ThinPoolConfig{Name: "tenantpool", OverprovisionRatio: 2},
	}}})
	g.must(err)
	svc, err := lvmd.NewService(lvmd.Options{Executor: g.host, Classes: classes})
	g.must(err)
	g.must(svc.Refresh(ctx))
	heads := func(lv lvmd.LV) { g.writeChunkHeads(lv.Path, "tenantpool", 48*mib) }

	t.Run("thin", func(t *testing.T) {
		if n := g.tenantSwap(svc, "tenantthin", 48*mib, nil, heads); n != 0 {
			t.Fatalf("the new volume shows %d lines of the previous tenant's data", n)
		}
	})
	t.Run("thin control without zeroing", func(t *testing.T) {
		g.sh("lvm", "lvchange", "--zero", "n", "gvg/tenantpool")
		defer g.sh("lvm", "lvchange", "--zero", "y", "gvg/tenantpool")
		n := g.tenantSwap(svc, "tenantthin", 48*mib, nil, heads)
		if n == 0 {
			t.Fatal("without zeroing the new thin LV shows no old data: the thin check proves nothing")
		}
		t.Logf("without zeroing a new thin LV shows %d lines of the previous tenant's data", n)
	})

	// What zeroing costs: a larger thick LV removed with lvmd's zeroing, and one removed plainly.
	big, err := g.svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "big", DeviceClass: "thick", Size: 512 * mib})
	g.must(err)
	start := time.Now()
	g.must(g.svc.RemoveLV(ctx, big.Name, "thick"))
	t.Logf("TIMING RemoveLV thick 512 MiB (zeroed): %v", time.Since(start).Round(time.Millisecond))
	g.sh("lvm", "lvcreate", "-y", "-n", "plain", "-L", "512m", "gvg")
	start = time.Now()
	g.sh("lvm", "lvremove", "-y", "gvg/plain")
	t.Logf("TIMING lvremove thick 512 MiB (not zeroed): %v", time.Since(start).Round(time.Millisecond))
}

// tenantSwap creates an LV of size in class, fills it with the marker, removes it, creates a second
// one and returns how many lines of the second show the marker. old and fresh (if set) see the LVs.
func (g *guestEnv) tenantSwap(svc *lvmd.Service, class string, size uint64, old, fresh func(lvmd.LV)) int {
	g.t.Helper()
	ctx := g.t.Context()
	first, err := svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "tenant1", DeviceClass: class, Size: size})
	g.must(err)
	g.sh(
		"sh",
		"-c",
		"yes "+tenantMarker+" | head -c "+itoa(size)+" | dd of="+first.Path+" bs=1M oflag=direct status=none",
	)
	if n := g.countMarker(first.Path); n == 0 {
		g.t.Fatalf("the marker was not written to %s", first.Path)
	}
	if old != nil {
		old(first)
	}
	start := time.Now()
	g.must(svc.RemoveLV(ctx, first.Name, class))
	g.t.Logf("TIMING RemoveLV %s %d MiB: %v", class, size/mib, time.Since(start).Round(time.Millisecond))
	// dm-thin reuses freed chunks after its next metadata commit (every second).
	time.Sleep(2 * time.Second)
	second, err := svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "tenant2", DeviceClass: class, Size: size})
	g.must(err)
	defer func() { g.must(svc.RemoveLV(ctx, second.Name, class)) }()
	if fresh != nil {
		fresh(second)
	}
	return g.countMarker(second.Path)
}

// thickTenantSwap runs tenantSwap on the thick class of svc and fails t unless the new LV sits on the
// very extents of the old one (or the check proves nothing) and shows none of its data.
func (g *guestEnv) thickTenantSwap(t *testing.T, svc *lvmd.Service) {
	t.Helper()
	var before, after []string
	n := g.tenantSwap(svc, "thick", 64*mib,
		func(lv lvmd.LV) { before = g.extents(lv.Name) },
		func(lv lvmd.LV) { after = g.extents(lv.Name) })
	if !slices.Equal(before, after) {
		t.Fatalf("the new LV is on %v, not on the old LV's extents %v: the test proves nothing", after, before)
	}
	if n != 0 {
		t.Fatalf("the new volume shows %d lines of the previous tenant's data", n)
	}
}

// writeChunkHeads writes 4 KiB of zeroes at the start of every chunk of thin pool gvg/pool in the
// first size bytes of dev, and syncs.
func (g *guestEnv) writeChunkHeads(dev, pool string, size uint64) {
	g.t.Helper()
	p, ok := g.state().LV("gvg", pool)
	if !ok || len(p.Segments) == 0 || p.Segments[0].ChunkSize == 0 {
		g.t.Fatalf("thin pool gvg/%s: %+v", pool, p)
	}
	chunk := p.Segments[0].ChunkSize
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	g.must(err)
	defer func() { g.must(f.Close()) }()
	block := make([]byte, 4096)
	for off := uint64(0); off < size; off += chunk {
		_, err := f.WriteAt(block, int64(off)) //nolint:gosec // offsets below the LV size
		g.must(err)
	}
	g.must(f.Sync())
	g.t.Logf("wrote 4 KiB at the head of each of %d chunks of %d KiB", size/chunk, chunk>>10)
}

// countMarker counts the lines of dev that contain the marker.
func (g *guestEnv) countMarker(dev string) int {
	g.t.Helper()
	out := g.sh("sh", "-c", "dd if="+dev+" bs=1M iflag=direct status=none | grep -a -c "+tenantMarker+" || true")
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		g.t.Fatalf("count of the marker in %s: %q", dev, out)
	}
	return n
}

// extents returns the PV extents of a thick LV of gvg ("/dev/ubdb(0)" ...).
func (g *guestEnv) extents(name string) []string {
	g.t.Helper()
	lv, ok := g.state().LV("gvg", name)
	if !ok {
		g.t.Fatalf("LV gvg/%s is missing", name)
	}
	var out []string
	for _, s := range lv.Segments {
		out = append(out, s.Devices...)
	}
	return out
}

// sh runs a command in the guest that must succeed and returns its output.
func (g *guestEnv) sh(name string, args ...string) string {
	g.t.Helper()
	out, err := exec.Run(g.t.Context(), g.host, name, args...)
	if err != nil {
		g.t.Fatalf("%s: %v", exec.CommandLine(name, args), err)
	}
	return string(out)
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
