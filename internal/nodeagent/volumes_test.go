package nodeagent

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	csinode "github.com/lvm-operator/lvm-operator/internal/csi/node"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvm/lvmtest"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

const (
	mib    = uint64(1) << 20
	gib    = uint64(1) << 30
	extent = 4 * mib
)

// newService is lvmd over a fake VG "vg" of 10 GiB (4 MiB extents) with thin pool "pool" of 4 GiB:
// thick class "thick" (default, spare 1 GiB), thin class "thin" (ratio 2), and class "missing"
// whose VG does not exist.
func newService(t *testing.T) (*lvmd.Service, *lvmtest.LVM) {
	t.Helper()
	f := lvmtest.New()
	f.AddVG("vg", 10*gib, extent, lvm.Tag)
	f.AddThinPool("vg", "pool", 4*gib)
	spare := uint64(1)
	classes, err := lvmd.NewDeviceClassManager(&lvmd.Config{DeviceClasses: []lvmd.DeviceClass{
		{Name: "missing", VolumeGroup: "novg"},
		{Name: "thick", VolumeGroup: "vg", Default: true, SpareGB: &spare},
		{
			Name:        "thin",
			VolumeGroup: "vg",
			Type:        lvmd.TypeThin,
			ThinPool:    &lvmd.ThinPoolConfig{Name: "pool", OverprovisionRatio: 2},
		},
	}})
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
	return svc, f
}

func TestVolumesDevice(t *testing.T) {
	svc, f := newService(t)
	ctx := t.Context()
	for _, req := range []lvmd.CreateLVRequest{
		{Name: "thick-lv", DeviceClass: "thick", Size: gib + 1},
		{Name: "thin-lv", DeviceClass: "thin", Size: 2 * gib},
	} {
		if _, err := svc.CreateLV(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	f.AddLV("vg", "foreign", gib)
	if err := svc.Refresh(ctx); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		id       string
		wantPath string
		wantSize int64
		wantErr  error
	}{
		{id: "thick-lv", wantPath: "/dev/vg/thick-lv", wantSize: int64(gib + extent)},
		{id: "thin-lv", wantPath: "/dev/vg/thin-lv", wantSize: int64(2 * gib)},
		{id: "nope", wantErr: csinode.ErrVolumeNotFound},
		{id: "foreign", wantErr: csinode.ErrVolumeNotFound},
		{id: "pool", wantErr: csinode.ErrVolumeNotFound},
	}
	v := NewVolumes(svc)
	v.stat = present
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			path, size, err := v.Device(ctx, tt.id)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if path != tt.wantPath || size != tt.wantSize {
				t.Errorf("Device = %q, %d; want %q, %d", path, size, tt.wantPath, tt.wantSize)
			}
		})
	}
}

// TestVolumesDeviceStateReadFailure: a failure to read the LVM state is not reported as "not found".
func TestVolumesDeviceStateReadFailure(t *testing.T) {
	f := lvmtest.New()
	classes, err := lvmd.NewDeviceClassManager(
		&lvmd.Config{DeviceClasses: []lvmd.DeviceClass{{Name: "thick", VolumeGroup: "vg"}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lvmd.NewService(lvmd.Options{Executor: f, Classes: classes})
	if err != nil {
		t.Fatal(err)
	}
	f.FailNext("fullreport", 5, "  Internal error: broken\n")
	vols := NewVolumes(svc)
	vols.stat = present
	_, _, err = vols.Device(t.Context(), "x")
	if err == nil || errors.Is(err, csinode.ErrVolumeNotFound) {
		t.Errorf("error %v, want a failure other than not found", err)
	}
}

// present is a stat that finds every device node.
func present(string) error { return nil }

// activator is an LVSource that records ActivateLV calls and "creates" the device node.
type activator struct {
	LVSource
	calls   []string
	fail    error
	created map[string]bool
}

func (a *activator) ActivateLV(_ context.Context, name, class string) error {
	a.calls = append(a.calls, class+"/"+name)
	if a.fail == nil {
		a.created["/dev/vg/"+name] = true
	}
	return a.fail
}

// TestVolumesDeviceActivatesAMissingDevice: an LV whose device node is missing (an lvcreate killed
// midway) is activated through lvmd before its path is handed out; when that fails, or without an
// lvmd that can, the error says the device is missing.
func TestVolumesDeviceActivatesAMissingDevice(t *testing.T) {
	svc, _ := newService(t)
	if _, err := svc.CreateLV(
		t.Context(),
		lvmd.CreateLVRequest{Name: "a", DeviceClass: "thin", Size: gib},
	); err != nil {
		t.Fatal(err)
	}
	a := &activator{LVSource: svc, created: map[string]bool{}}
	v := NewVolumes(a)
	v.stat = func(p string) error {
		if a.created[p] {
			return nil
		}
		return fs.ErrNotExist
	}
	if path, _, err := v.Device(t.Context(), "a"); err != nil || path != "/dev/vg/a" || len(a.calls) != 1 {
		t.Fatalf("Device = %s, %v; activations %v", path, err, a.calls)
	}
	if _, _, err := v.Device(t.Context(), "a"); err != nil || len(a.calls) != 1 {
		t.Fatalf("second Device: %v; activations %v (want no second one)", err, a.calls)
	}
	a.created = map[string]bool{}
	a.fail = errors.New("lvchange failed")
	if _, _, err := v.Device(t.Context(), "a"); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Device with a failing activation = %v", err)
	}
	plain := NewVolumes(struct{ LVSource }{svc})
	plain.stat = func(string) error { return fs.ErrNotExist }
	if _, _, err := plain.Device(t.Context(), "a"); err == nil || !strings.Contains(err.Error(), "lvchange -ay") {
		t.Fatalf("Device without an activator = %v", err)
	}
}
