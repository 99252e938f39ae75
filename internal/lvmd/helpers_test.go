package lvmd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvm/lvmtest"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

const (
	mib    = uint64(1) << 20
	gib    = uint64(1) << 30
	extent = 4 * mib
)

func ptr[T any](v T) *T { return &v }

// serviceOn returns a service of testConfig's classes running its commands on e, with no timed
// refresh.
func serviceOn(tb testing.TB, e exec.Executor) *lvmd.Service {
	tb.Helper()
	classes, err := lvmd.NewDeviceClassManager(testConfig())
	if err != nil {
		tb.Fatal(err)
	}
	svc, err := lvmd.NewService(lvmd.Options{Executor: e, Classes: classes, RefreshInterval: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	return svc
}

// testConfig: a thick class (spare 1 GiB) and a thin class (ratio 2) on VG
// "vg" (10 GiB) with pool "pool" (4 GiB).
func testConfig() *lvmd.Config {
	return &lvmd.Config{DeviceClasses: []lvmd.DeviceClass{
		{Name: "thick", VolumeGroup: "vg", Default: true, SpareGB: ptr(uint64(1))},
		{Name: "thin", VolumeGroup: "vg", Type: lvmd.TypeThin,
			ThinPool: &lvmd.ThinPoolConfig{Name: "pool", OverprovisionRatio: 2}},
	}}
}

type env struct {
	t       *testing.T
	fake    *lvmtest.LVM
	classes *lvmd.DeviceClassManager
	svc     *lvmd.Service
}

// newEnv returns a warm service (state read) on a fake with VG "vg" of
// 10 GiB (4 MiB extents, tagged lvms) on four PVs, holding thin pool "pool" of 4 GiB.
func newEnv(t *testing.T, cfg *lvmd.Config) *env {
	t.Helper()
	f := lvmtest.New()
	f.AddVG("vg", 10*gib/4, extent, lvm.Tag)
	for _, dev := range []string{"/dev/sdc", "/dev/sdd", "/dev/sde"} {
		f.AddPV("vg", dev, 10*gib/4)
	}
	f.AddThinPool("vg", "pool", 4*gib)
	classes, err := lvmd.NewDeviceClassManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lvmd.NewService(lvmd.Options{Executor: f, Classes: classes, RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.Reset()
	return &env{t: t, fake: f, classes: classes, svc: svc}
}

// addFastClass adds VG "vg2" (4 GiB) to the fake and a thick class "fast" on it to the device
// classes, as the node agent does after it created a new VG.
func (e *env) addFastClass() {
	e.t.Helper()
	e.fake.AddVG("vg2", 4*gib, extent, "lvms")
	cfg := testConfig()
	cfg.DeviceClasses = append(
		cfg.DeviceClasses,
		lvmd.DeviceClass{Name: "fast", VolumeGroup: "vg2", SpareGB: ptr(uint64(0))},
	)
	wantErr(e.t, e.classes.Replace(cfg), nil)
}

func (e *env) free(class string) uint64 {
	e.t.Helper()
	c, err := e.svc.Capacity(e.t.Context(), class)
	if err != nil {
		e.t.Fatal(err)
	}
	return c.FreeBytes
}

func (e *env) create(name, class string, size uint64) lvmd.LV {
	e.t.Helper()
	lv, err := e.svc.CreateLV(e.t.Context(), lvmd.CreateLVRequest{Name: name, DeviceClass: class, Size: size})
	if err != nil {
		e.t.Fatal(err)
	}
	return lv
}

// checkNoDrift compares the cached capacities with a fresh state read.
func (e *env) checkNoDrift() {
	e.t.Helper()
	cached, err := e.svc.Capacities(e.t.Context())
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.svc.Refresh(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
	fresh, _ := e.svc.Capacities(e.t.Context())
	for i := range cached {
		if cached[i].FreeBytes != fresh[i].FreeBytes || cached[i].SizeBytes != fresh[i].SizeBytes {
			e.t.Errorf("cache drifted for %s: cached free %d size %d, lvm free %d size %d", cached[i].DeviceClass,
				cached[i].FreeBytes, cached[i].SizeBytes, fresh[i].FreeBytes, fresh[i].SizeBytes)
		}
	}
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if want == nil && err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if want != nil && !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
