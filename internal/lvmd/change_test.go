package lvmd_test

import (
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

func TestChangeLVReadAhead(t *testing.T) {
	e := newEnv(t, testConfig())
	ctx := t.Context()
	_, err := e.svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "a", DeviceClass: "thin", Size: gib})
	wantErr(t, err, nil)
	lv, err := e.svc.GetLV(ctx, "a", "thin")
	if err != nil || lv.ReadAhead != "auto" {
		t.Fatalf("a new LV: %+v, %v; want read-ahead auto (lvcreate's default)", lv, err)
	}
	change := func(ra string) (lvmd.LV, error) {
		return e.svc.ChangeLV(ctx, lvmd.ChangeLVRequest{Name: "a", DeviceClass: "thin", ReadAhead: ra})
	}
	lv, err = change("2048")
	if err != nil || lv.ReadAhead != "2048" || e.fake.Count("lvchange") != 1 {
		t.Fatalf("ChangeLV(2048) = %+v, %v after %d lvchange; want 2048 after one", lv, err, e.fake.Count("lvchange"))
	}
	// What the cache shows in place runs no command: the same value, or one lvm2 rounds to it.
	for _, ra := range []string{"2048", "2049"} {
		if lv, err := change(ra); err != nil || lv.ReadAhead != "2048" || e.fake.Count("lvchange") != 1 {
			t.Errorf("ChangeLV(%s) again = %+v, %v after %d lvchange; want no command", ra, lv, err,
				e.fake.Count("lvchange"))
		}
	}
	// A full state read reads lvm2's setting back.
	wantErr(t, e.svc.Refresh(ctx), nil)
	if lv, err := e.svc.GetLV(ctx, "a", "thin"); err != nil || lv.ReadAhead != "2048" {
		t.Errorf("after a state read: %+v, %v; want read-ahead 2048", lv, err)
	}
	if lv, err := change("none"); err != nil || lv.ReadAhead != "none" {
		t.Errorf("ChangeLV(none) = %+v, %v", lv, err)
	}
	e.fake.FailNext("lvchange", 5, "  device-mapper: reload ioctl on (253:4) failed: Invalid argument")
	if _, err := change("auto"); err == nil {
		t.Error("ChangeLV succeeded when lvchange failed")
	}
	if lv, _ := e.svc.GetLV(ctx, "a", "thin"); lv.ReadAhead != "none" {
		t.Errorf("after a failed lvchange the read-ahead is %q, want none (the state read again)", lv.ReadAhead)
	}
	_, err = e.svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "k", DeviceClass: "thick", Size: gib})
	wantErr(t, err, nil)
	_, err = e.svc.CreateSnapshot(ctx, lvmd.SnapshotRequest{Name: "ks", DeviceClass: "thick", Source: "k", Size: gib,
		ReadOnly: true})
	wantErr(t, err, nil)
	for _, tt := range []struct {
		name string
		req  lvmd.ChangeLVRequest
		want error
	}{
		{"nothing to change", lvmd.ChangeLVRequest{Name: "a", DeviceClass: "thin"}, lvmd.ErrInvalidArgument},
		{"a size", lvmd.ChangeLVRequest{Name: "a", DeviceClass: "thin", ReadAhead: "1k"}, lvmd.ErrInvalidArgument},
		{"no such LV", lvmd.ChangeLVRequest{Name: "nope", DeviceClass: "thin", ReadAhead: "8"}, lvmd.ErrNotFound},
		{"not ours", lvmd.ChangeLVRequest{Name: "pool", DeviceClass: "thick", ReadAhead: "8"}, lvmd.ErrNotOurs},
		{"unknown class", lvmd.ChangeLVRequest{Name: "a", DeviceClass: "nope", ReadAhead: "8"},
			lvmd.ErrUnknownDeviceClass},
		{"origin of a copy-on-write snapshot", lvmd.ChangeLVRequest{Name: "k", DeviceClass: "thick", ReadAhead: "8"},
			lvmd.ErrInUse},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.svc.ChangeLV(ctx, tt.req)
			wantErr(t, err, tt.want)
		})
	}
}
