package nodeagent

import (
	"errors"
	"testing"
	"time"

	csinode "github.com/lvm-operator/lvm-operator/internal/csi/node"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
	"github.com/lvm-operator/lvm-operator/internal/lvmd/fakelvm"
)

const (
	mib    = uint64(1) << 20
	gib    = uint64(1) << 30
	extent = 4 * mib
)

// newService is lvmd over a fake VG "vg" of 10 GiB (4 MiB extents) with thin pool "pool" of 4 GiB:
// thick class "thick" (default, spare 1 GiB), thin class "thin" (ratio 2), and class "missing"
// whose VG does not exist.
func newService(t *testing.T) (*lvmd.Service, *fakelvm.LVM) {
	t.Helper()
	f := fakelvm.New()
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
	f := fakelvm.New()
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
	_, _, err = NewVolumes(svc).Device(t.Context(), "x")
	if err == nil || errors.Is(err, csinode.ErrVolumeNotFound) {
		t.Errorf("error %v, want a failure other than not found", err)
	}
}
