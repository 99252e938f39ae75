//go:build guest

package lvmd_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
	"github.com/lvm-operator/lvm-operator/internal/testing/umlguest"
)

// Guest tests run inside a User-mode Linux guest (hack/test-lvm.sh) as root
// with real lvm2 and device-mapper, on the disks in LVMS_GUEST_DISKS.

type guestEnv struct {
	t    *testing.T
	host *exec.Host
	lvm  *lvm.Client
	svc  *lvmd.Service
	cfg  *lvmd.Config
}

func newGuestEnv(t *testing.T) *guestEnv {
	t.Helper()
	disks := umlguest.Disks(t, 0, 2)
	h := exec.NewHost()
	g := &guestEnv{t: t, host: h, lvm: lvm.New(h)}
	ctx := t.Context()
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = exec.Run(cctx, h, "lvm", "vgremove", "-f", "-y", "gvg")
		_, _ = exec.Run(cctx, h, "lvm", append([]string{"pvremove", "-ff", "-y"}, disks...)...)
		_, _ = exec.Run(cctx, h, "wipefs", append([]string{"--all", "--force"}, disks...)...)
	})
	g.must(g.lvm.CreateVG(ctx, "gvg", disks))
	vg, err := g.lvm.OwnedVG(ctx, "gvg")
	g.must(err)
	g.must(g.lvm.CreateThinPool(ctx, vg, lvm.ThinPoolOptions{Name: "pool", Size: gib}))
	g.cfg = &lvmd.Config{DeviceClasses: []lvmd.DeviceClass{
		{Name: "thick", VolumeGroup: "gvg", Default: true, SpareGB: ptr(uint64(0))},
		{
			Name:        "thin",
			VolumeGroup: "gvg",
			Type:        lvmd.TypeThin,
			ThinPool:    &lvmd.ThinPoolConfig{Name: "pool", OverprovisionRatio: 3},
		},
	}}
	classes, err := lvmd.NewDeviceClassManager(g.cfg)
	g.must(err)
	g.svc, err = lvmd.NewService(lvmd.Options{Executor: h, Classes: classes})
	g.must(err)
	g.must(g.svc.Refresh(ctx))
	return g
}

func (g *guestEnv) must(err error) {
	g.t.Helper()
	if err != nil {
		g.t.Fatal(err)
	}
}

func (g *guestEnv) state() *lvm.State {
	g.t.Helper()
	s, err := g.lvm.State(g.t.Context())
	g.must(err)
	return s
}

// oneExec runs f and fails unless it ran exactly one lvm command.
func (g *guestEnv) oneExec(label string, f func() error) {
	g.t.Helper()
	before := g.host.Counter().Count(lvm.Command)
	start := time.Now()
	g.must(f())
	d := time.Since(start)
	n := g.host.Counter().Count(lvm.Command) - before
	g.t.Logf("TIMING %s: %v, lvm execs: %d", label, d.Round(time.Millisecond), n)
	if n != 1 {
		g.t.Errorf("%s ran lvm %d times, want exactly 1", label, n)
	}
}

// checkCapacity compares the service's cached capacity with lvm2's reality
// computed independently from a fresh state read.
func (g *guestEnv) checkCapacity(when string) {
	g.t.Helper()
	caps, err := g.svc.Capacities(g.t.Context())
	g.must(err)
	s := g.state()
	vg, _ := s.VG("gvg")
	pool, _ := s.LV("gvg", "pool")
	var virtual uint64
	for _, lv := range s.LVs {
		if lv.PoolLV == "pool" && lv.Attr.IsThin() {
			virtual += lv.Size
		}
	}
	wantThin := thinRoom(pool, virtual, 3)
	if caps[0].FreeBytes != vg.Free || caps[1].FreeBytes != wantThin {
		g.t.Errorf("%s: cached capacity thick %d thin %d, lvm reality thick %d (VG free) thin %d (3 x %d - %d, "+
			"data %.2f %%)", when, caps[0].FreeBytes, caps[1].FreeBytes, vg.Free, wantThin, pool.Size, virtual,
			pool.DataPercent)
	}
	for _, c := range caps[:2] {
		if c.VGSizeBytes != vg.Size || c.VGFreeBytes != vg.Free {
			g.t.Errorf("%s: class %s reports VG size %d free %d, lvm reality size %d free %d",
				when, c.DeviceClass, c.VGSizeBytes, c.VGFreeBytes, vg.Size, vg.Free)
		}
	}
}

func TestGuestLVMDService(t *testing.T) {
	g := newGuestEnv(t)
	ctx := t.Context()
	svc := g.svc
	g.checkCapacity("start")

	var thick, thin lvmd.LV
	g.oneExec("CreateLV thick 100MiB+1", func() (err error) {
		thick, err = svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "thick", DeviceClass: "thick", Size: 100*mib + 1})
		return err
	})
	g.oneExec("CreateLV thin 300MiB", func() (err error) {
		thin, err = svc.CreateLV(
			ctx,
			lvmd.CreateLVRequest{Name: "thin", DeviceClass: "thin", Size: 300 * mib, Tags: []string{"pvc=x"}},
		)
		return err
	})
	s := g.state()
	if lv, ok := s.LV(
		"gvg",
		"thick",
	); !ok || lv.Size != thick.Size || thick.Size != 104*mib || !lv.Attr.Active() ||
		lv.Tags[0] != "lvms" {
		t.Errorf("thick LV: lvm %+v, service %+v", lv, thick)
	}
	if lv, ok := s.LV("gvg", "thin"); !ok || lv.Size != thin.Size || !lv.Attr.IsThin() || len(lv.Tags) != 2 {
		t.Errorf("thin LV: lvm %+v, service %+v", lv, thin)
	}
	g.checkCapacity("after creates")

	before := g.host.Counter().Count(lvm.Command)
	if _, err := svc.CreateLV(
		ctx,
		lvmd.CreateLVRequest{Name: "thin", DeviceClass: "thin", Size: 300 * mib},
	); err != nil {
		t.Errorf("repeated create: %v", err)
	}
	if n := g.host.Counter().Count(lvm.Command) - before; n != 0 {
		t.Errorf("repeated create ran lvm %d times", n)
	}

	g.oneExec("CreateSnapshot thin read-only", func() error {
		_, err := svc.CreateSnapshot(
			ctx,
			lvmd.SnapshotRequest{Name: "snap", DeviceClass: "thin", Source: "thin", ReadOnly: true},
		)
		return err
	})
	g.oneExec("CreateSnapshot thin writable clone", func() error {
		_, err := svc.CreateSnapshot(ctx, lvmd.SnapshotRequest{Name: "clone", DeviceClass: "thin", Source: "snap"})
		return err
	})
	g.oneExec("CreateSnapshot thick COW 50MiB", func() error {
		_, err := svc.CreateSnapshot(
			ctx,
			lvmd.SnapshotRequest{Name: "cow", DeviceClass: "thick", Source: "thick", Size: 50 * mib, ReadOnly: true},
		)
		return err
	})
	s = g.state()
	snap, _ := s.LV("gvg", "snap")
	clone, _ := s.LV("gvg", "clone")
	cow, _ := s.LV("gvg", "cow")
	if !snap.Attr.IsThin() || snap.Attr.Writable() || !snap.Attr.Active() || snap.Origin != "thin" {
		t.Errorf("read-only snapshot = %+v", snap)
	}
	if !clone.Attr.IsThin() || !clone.Attr.Writable() || !clone.Attr.Active() || clone.Origin != "snap" {
		t.Errorf("clone = %+v", clone)
	}
	if !cow.Attr.IsSnapshot() || cow.Origin != "thick" || cow.Size != 52*mib {
		t.Errorf("COW snapshot = %+v", cow)
	}
	g.checkCapacity("after snapshots")

	g.oneExec("ResizeLV thin 300->500MiB", func() error {
		_, err := svc.ResizeLV(ctx, "thin", "thin", 500*mib)
		return err
	})
	if lv, _ := g.state().LV("gvg", "thin"); lv.Size != 500*mib {
		t.Errorf("thin after resize = %d", lv.Size)
	}
	g.checkCapacity("after resize")

	if err := svc.RemoveLV(ctx, "thick", "thick"); !errorsIs(err, lvmd.ErrInUse) {
		t.Errorf("removing an origin with COW snapshots: %v", err)
	}
	for _, r := range [][2]string{{"cow", "thick"}, {"thick", "thick"}, {"clone", "thin"}, {"snap", "thin"}} {
		g.oneExec("RemoveLV "+r[0], func() error { return svc.RemoveLV(ctx, r[0], r[1]) })
	}
	g.oneExec("CreateLV thick 10MiB", func() error {
		_, err := svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "grow", DeviceClass: "thick", Size: 10 * mib})
		return err
	})
	g.oneExec("ResizeLV thick 12->200MiB", func() error {
		_, err := svc.ResizeLV(ctx, "grow", "thick", 200*mib)
		return err
	})
	g.checkCapacity("after removes and thick resize")

	// Refresh and compare: the cache had no drift.
	cached, _ := svc.Capacities(ctx)
	g.must(svc.Refresh(ctx))
	fresh, _ := svc.Capacities(ctx)
	for i := range cached {
		if cached[i].FreeBytes != fresh[i].FreeBytes {
			t.Errorf(
				"class %s drifted: cached %d, refreshed %d",
				cached[i].DeviceClass,
				cached[i].FreeBytes,
				fresh[i].FreeBytes,
			)
		}
	}
	// Too large: refused from the cache with no command.
	before = g.host.Counter().Count(lvm.Command)
	_, err := svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "huge", DeviceClass: "thick", Size: 100 * gib})
	if !errorsIs(err, lvmd.ErrInsufficientCapacity) || g.host.Counter().Count(lvm.Command) != before {
		t.Errorf("huge create: %v", err)
	}
}

func TestGuestLVMDGRPC(t *testing.T) {
	g := newGuestEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sock := filepath.Join(os.TempDir(), "lvmd-guest.sock")
	served := make(chan error, 1)
	go func() { served <- lvmd.Serve(ctx, g.svc, sock, time.Second) }()
	c, err := lvmd.Dial(sock, grpc.WithDefaultCallOptions(grpc.WaitForReady(true)))
	g.must(err)
	defer c.Close()

	before := g.host.Counter().Count(lvm.Command)
	start := time.Now()
	lv, err := c.CreateLV(ctx, lvmd.CreateLVRequest{Name: "vol", DeviceClass: "thin", Size: gib})
	g.must(err)
	t.Logf("TIMING gRPC CreateLV thin: %v, lvm execs: %d", time.Since(start).Round(time.Millisecond),
		g.host.Counter().Count(lvm.Command)-before)
	if _, err := os.Stat(lv.Path); err != nil {
		t.Errorf("device of created LV: %v", err)
	}
	free, err := c.FreeBytes(ctx, "thin")
	g.must(err)
	g.checkCapacity("gRPC")
	caps, _ := g.svc.Capacities(ctx)
	if free != caps[1].FreeBytes {
		t.Errorf("gRPC free %d != service %d", free, caps[1].FreeBytes)
	}
	_, err = c.CreateLV(ctx, lvmd.CreateLVRequest{Name: "big", DeviceClass: "thin", Size: 10 * gib})
	if !errorsIs(err, lvmd.ErrInsufficientCapacity) {
		t.Errorf("over capacity over gRPC: %v", err)
	}
	g.must(c.RemoveLV(ctx, "vol", "thin"))
	if _, ok := g.state().LV("gvg", "vol"); ok {
		t.Error("LV still exists after RemoveLV")
	}
	cancel()
	g.must(<-served)
}
