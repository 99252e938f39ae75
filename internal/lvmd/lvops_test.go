package lvmd_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

func TestResizeLV(t *testing.T) {
	tests := []struct {
		name, class    string
		from, to, want uint64
		wantCmds       int
		freeDelta      uint64
	}{
		{"thick grows", "thick", gib, 2*gib + 1, 2*gib + extent, 1, gib + extent},
		{"thin grows", "thin", gib, 3 * gib, 3 * gib, 1, 2 * gib},
		{"same size is a no-op", "thick", gib, gib, gib, 0, 0},
		{"shrink is a no-op", "thin", gib, mib, gib, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, testConfig())
			e.create("lv", tt.class, tt.from)
			free := e.free(tt.class)
			e.fake.Reset()
			lv, err := e.svc.ResizeLV(t.Context(), "lv", tt.class, tt.to)
			wantErr(t, err, nil)
			if lv.Size != tt.want {
				t.Errorf("size = %d, want %d", lv.Size, tt.want)
			}
			if n := e.fake.Count(""); n != tt.wantCmds {
				t.Errorf("ran %v, want %d commands", e.fake.Calls(), tt.wantCmds)
			}
			if got := free - e.free(tt.class); got != tt.freeDelta {
				t.Errorf("capacity dropped by %d, want %d", got, tt.freeDelta)
			}
			e.checkNoDrift()
		})
	}
	e := newEnv(t, testConfig())
	e.create("lv", "thin", gib)
	_, err := e.svc.ResizeLV(t.Context(), "lv", "thin", 9*gib)
	wantErr(t, err, lvmd.ErrInsufficientCapacity)
	_, err = e.svc.ResizeLV(t.Context(), "nope", "thin", 9*gib)
	wantErr(t, err, lvmd.ErrNotFound)
}

func TestSnapshots(t *testing.T) {
	e := newEnv(t, testConfig())
	ctx := t.Context()
	e.create("thin", "thin", gib)
	e.create("thick", "thick", gib)
	thinFree, thickFree := e.free("thin"), e.free("thick")

	ro, err := e.svc.CreateSnapshot(
		ctx,
		lvmd.SnapshotRequest{Name: "snap", DeviceClass: "thin", Source: "thin", ReadOnly: true},
	)
	wantErr(t, err, nil)
	if !ro.ReadOnly || ro.Origin != "thin" || ro.Size != gib || ro.ThinPool != "pool" {
		t.Errorf("read-only snapshot = %+v", ro)
	}
	clone, err := e.svc.CreateSnapshot(ctx, lvmd.SnapshotRequest{Name: "clone", DeviceClass: "thin", Source: "snap"})
	wantErr(t, err, nil)
	if clone.ReadOnly || clone.Origin != "snap" {
		t.Errorf("clone = %+v", clone)
	}
	if got := thinFree - e.free("thin"); got != 2*gib {
		t.Errorf("thin snapshots took %d of thin capacity, want their virtual sizes (2 GiB)", got)
	}
	cow, err := e.svc.CreateSnapshot(
		ctx,
		lvmd.SnapshotRequest{Name: "cow", DeviceClass: "thick", Source: "thick", Size: 101 * mib, ReadOnly: true},
	)
	wantErr(t, err, nil)
	if cow.Size != 104*mib || cow.Origin != "thick" || thickFree-e.free("thick") != 104*mib {
		t.Errorf("COW snapshot = %+v, thick capacity dropped by %d", cow, thickFree-e.free("thick"))
	}
	e.checkNoDrift()

	e.fake.Reset()
	again, err := e.svc.CreateSnapshot(
		ctx,
		lvmd.SnapshotRequest{Name: "snap", DeviceClass: "thin", Source: "thin", ReadOnly: true},
	)
	if err != nil || again.Name != "snap" || e.fake.Count("") != 0 {
		t.Errorf("repeated snapshot: %+v, %v, calls %v", again, err, e.fake.Calls())
	}
	tests := []struct {
		name string
		req  lvmd.SnapshotRequest
		want error
	}{
		{
			"other access mode",
			lvmd.SnapshotRequest{Name: "snap", DeviceClass: "thin", Source: "thin"},
			lvmd.ErrAlreadyExists,
		},
		{
			"other source",
			lvmd.SnapshotRequest{Name: "snap", DeviceClass: "thin", Source: "clone", ReadOnly: true},
			lvmd.ErrAlreadyExists,
		},
		{"missing source", lvmd.SnapshotRequest{Name: "s2", DeviceClass: "thin", Source: "nope"}, lvmd.ErrNotFound},
		{
			"source in other class",
			lvmd.SnapshotRequest{Name: "s2", DeviceClass: "thin", Source: "thick"},
			lvmd.ErrInvalidArgument,
		},
		{
			"thick without size",
			lvmd.SnapshotRequest{Name: "s2", DeviceClass: "thick", Source: "thick"},
			lvmd.ErrInvalidArgument,
		},
		{
			"read-only snapshot of COW snapshot (writable ones are restores by copy)",
			lvmd.SnapshotRequest{Name: "s2", DeviceClass: "thick", Source: "cow", Size: mib, ReadOnly: true},
			lvmd.ErrInvalidArgument,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.svc.CreateSnapshot(ctx, tt.req)
			wantErr(t, err, tt.want)
		})
	}
	// A COW store larger than a rewrite of the whole origin needs is useless: 1 GiB of data chunks, a
	// header chunk and 1025 metadata chunks (lvm2's cow_max_size), rounded up to extents.
	big, err := e.svc.CreateSnapshot(
		ctx,
		lvmd.SnapshotRequest{Name: "big", DeviceClass: "thick", Source: "thick", Size: 100 * gib, ReadOnly: true},
	)
	wantErr(t, err, nil)
	if big.Size != 1032*mib {
		t.Errorf("COW snapshot of a 1 GiB origin asking for 100 GiB has %d bytes, want 1032 MiB", big.Size)
	}
	wantErr(t, e.svc.RemoveLV(ctx, "big", "thick"), nil)
	// An origin with COW snapshots is not removed (lvremove would take
	// the snapshots with it); the snapshot first, then the origin.
	wantErr(t, e.svc.RemoveLV(ctx, "thick", "thick"), lvmd.ErrInUse)
	wantErr(t, e.svc.RemoveLV(ctx, "cow", "thick"), nil)
	wantErr(t, e.svc.RemoveLV(ctx, "thick", "thick"), nil)
	// A snapshot is zeroed through its COW device, the extents it owns.
	if z := e.fake.Zeroed(); !slices.Contains(z, "/dev/mapper/vg-cow-cow") || !slices.Contains(z, "/dev/vg/thick") {
		t.Errorf("zeroed %v", z)
	}
	e.checkNoDrift()
}

func TestRemoveLV(t *testing.T) {
	e := newEnv(t, testConfig())
	ctx := t.Context()
	thick, thin := e.free("thick"), e.free("thin")
	e.create("a", "thick", gib)
	e.create("b", "thin", gib)
	e.fake.AddLV("vg", "foreign", gib)
	wantErr(t, e.svc.Refresh(ctx), nil)
	e.fake.Reset()

	wantErr(t, e.svc.RemoveLV(ctx, "a", "thick"), nil)
	wantErr(t, e.svc.RemoveLV(ctx, "b", "thin"), nil)
	// The thick LV's extents are zeroed before they are freed; the thin LV needs nothing (its pool
	// zeroes what it provisions).
	if e.fake.Count("lvremove") != 2 || e.fake.Count("") != 3 ||
		!slices.Equal(e.fake.Zeroed(), []string{"/dev/vg/a"}) {
		t.Errorf("calls = %v, zeroed %v", e.fake.Calls(), e.fake.Zeroed())
	}
	if e.free("thin") != thin || e.free("thick") != thick-gib {
		t.Errorf(
			"capacity after remove: thick %d (want %d), thin %d (want %d)",
			e.free("thick"),
			thick-gib,
			e.free("thin"),
			thin,
		)
	}
	e.fake.Reset()
	wantErr(t, e.svc.RemoveLV(ctx, "a", "thick"), nil)
	if e.fake.Count("") != 0 {
		t.Errorf("removing a missing LV ran %v", e.fake.Calls())
	}
	wantErr(t, e.svc.RemoveLV(ctx, "foreign", "thick"), lvmd.ErrNotOurs)
	wantErr(t, e.svc.RemoveLV(ctx, "pool", "thick"), lvmd.ErrNotOurs)
	lvs, err := e.svc.ListLVs(ctx, "thick")
	if err != nil || len(lvs) != 0 {
		t.Errorf("ListLVs = %v, %v (foreign LVs are not listed)", lvs, err)
	}
	e.checkNoDrift()
}

func TestGetAndListLVs(t *testing.T) {
	e := newEnv(t, testConfig())
	ctx := t.Context()
	e.create("b", "thin", gib)
	e.create("a", "thin", gib)
	e.create("c", "", gib)
	lvs, err := e.svc.ListLVs(ctx, "thin")
	if err != nil || len(lvs) != 2 || lvs[0].Name != "a" || lvs[1].Name != "b" || lvs[0].Path != "/dev/vg/a" {
		t.Errorf("ListLVs(thin) = %+v, %v", lvs, err)
	}
	lv, err := e.svc.GetLV(ctx, "c", "thick")
	if err != nil || lv.DeviceClass != "thick" || lv.Size != gib || lv.Tags[0] != "lvms" {
		t.Errorf("GetLV = %+v, %v", lv, err)
	}
	_, err = e.svc.GetLV(ctx, "c", "thin")
	wantErr(t, err, lvmd.ErrInvalidArgument)
	_, err = e.svc.GetLV(ctx, "zz", "thin")
	wantErr(t, err, lvmd.ErrNotFound)
}

func TestDeviceClassSwapAtRunTime(t *testing.T) {
	e := newEnv(t, testConfig())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.svc.Run(ctx) }()
	caps := e.svc.Watch(ctx)
	first := <-caps
	if len(first) != 2 {
		t.Fatalf("first capacities = %+v", first)
	}
	_, err := e.svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "x", DeviceClass: "fast", Size: gib})
	wantErr(t, err, lvmd.ErrUnknownDeviceClass)

	// The node agent creates a new VG and adds its class: no restart.
	e.addFastClass()
	got := waitFor(t, caps, func(c []lvmd.Capacity) bool { return len(c) == 3 && c[2].Ready })
	if got[2].FreeBytes != 4*gib {
		t.Errorf("new class capacity = %+v", got[2])
	}
	e.create("x", "fast", gib)

	// An invalid configuration is refused and the current one stays.
	bad := testConfig()
	bad.DeviceClasses[1].ThinPool = nil
	wantErr(t, e.classes.Replace(bad), lvmd.ErrInvalidArgument)
	if _, err := e.classes.DeviceClass("fast"); err != nil {
		t.Errorf("class lost after a refused replace: %v", err)
	}
	cancel()
	wantErr(t, <-done, nil)
}

func TestWatch(t *testing.T) {
	e := newEnv(t, testConfig())
	ctx, cancel := context.WithCancel(t.Context())
	caps := e.svc.Watch(ctx)
	first := <-caps
	if first[1].FreeBytes != 8*gib || first[1].ThinPool == nil || first[1].ThinPool.OverprovisionRatio != 2 {
		t.Errorf("first = %+v", first)
	}
	e.create("a", "thin", gib)
	if c := <-caps; c[1].FreeBytes != 7*gib || c[1].ThinPool.VirtualBytes != gib {
		t.Errorf("after create = %+v", c[1])
	}
	// A slow subscriber is never blocked on and gets the newest value.
	for i := range 5 {
		e.create(string(rune('b'+i)), "thin", gib)
	}
	select {
	case c := <-caps:
		if c[1].FreeBytes != 2*gib {
			t.Errorf("coalesced value = %d, want the newest (2 GiB)", c[1].FreeBytes)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no value")
	}
	select {
	case c := <-caps:
		t.Errorf("unexpected extra value %+v", c)
	default:
	}
	// Refreshing without a change sends nothing.
	wantErr(t, e.svc.Refresh(t.Context()), nil)
	select {
	case c := <-caps:
		t.Errorf("unchanged refresh sent %+v", c)
	default:
	}
	cancel()
	for range caps {
	}
}

func waitFor(t *testing.T, ch <-chan []lvmd.Capacity, ok func([]lvmd.Capacity) bool) []lvmd.Capacity {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c := <-ch:
			if ok(c) {
				return c
			}
		case <-timeout:
			t.Fatal("timed out waiting for capacities")
		}
	}
}
