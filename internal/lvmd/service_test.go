package lvmd_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// vgFree is the fake VG's free space after the 4 GiB pool (+2 metadata
// extents).
const vgFree = 6*gib - 2*extent

func TestCapacity(t *testing.T) {
	tests := []struct {
		name              string
		setup             func(e *env)
		wantThick, wantTn uint64
	}{
		{name: "empty", setup: func(*env) {},
			wantThick: vgFree - gib, wantTn: 8 * gib},
		{name: "thick LV takes VG space, rounded up to extents", setup: func(e *env) { e.create("a", "thick", 5*mib) },
			wantThick: vgFree - gib - 8*mib, wantTn: 8 * gib},
		{name: "thin LVs take overprovisioned space by virtual size", setup: func(e *env) {
			e.create("a", "thin", 3*gib)
			e.create("b", "thin", 3*gib+1)
		}, wantThick: vgFree - gib, wantTn: 8*gib - 6*gib - extent},
		{name: "thin capacity is never negative", setup: func(e *env) {
			e.create("a", "thin", 8*gib)
		}, wantThick: vgFree - gib, wantTn: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, testConfig())
			tt.setup(e)
			if got := e.free("thick"); got != tt.wantThick {
				t.Errorf("thick free = %d, want %d", got, tt.wantThick)
			}
			if got := e.free("thin"); got != tt.wantTn {
				t.Errorf("thin free = %d, want %d", got, tt.wantTn)
			}
			e.checkNoDrift()
		})
	}
}

func TestThickCapacityFloorsAtZero(t *testing.T) {
	cfg := testConfig()
	cfg.DeviceClasses[0].SpareGB = ptr(uint64(100))
	e := newEnv(t, cfg)
	if got := e.free("thick"); got != 0 {
		t.Errorf("free with spare > VG free = %d, want 0", got)
	}
}

// TestCreateLVRunsOneLVMCommand is the hot-path guarantee: a warm service
// runs exactly one lvm command per create (no state read).
func TestCreateLVRunsOneLVMCommand(t *testing.T) {
	tests := []struct {
		name string
		do   func(e *env) error
	}{
		{"thick", func(e *env) error {
			_, err := e.svc.CreateLV(e.t.Context(), lvmd.CreateLVRequest{Name: "lv", DeviceClass: "thick", Size: gib})
			return err
		}},
		{"thin", func(e *env) error {
			_, err := e.svc.CreateLV(e.t.Context(), lvmd.CreateLVRequest{Name: "lv", DeviceClass: "thin", Size: gib})
			return err
		}},
		{"thin snapshot", func(e *env) error {
			_, err := e.svc.CreateSnapshot(
				e.t.Context(),
				lvmd.SnapshotRequest{Name: "snap", DeviceClass: "thin", Source: "src", ReadOnly: true},
			)
			return err
		}},
		{"thick snapshot", func(e *env) error {
			_, err := e.svc.CreateSnapshot(
				e.t.Context(),
				lvmd.SnapshotRequest{Name: "snap", DeviceClass: "thick", Source: "src", Size: gib, ReadOnly: true},
			)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, testConfig())
			e.create("src", "thin", gib)
			e.create("src2", "thick", gib)
			e.fake.AddLV("vg", "foreign", gib) // not ours, must not matter
			if err := e.svc.Refresh(t.Context()); err != nil {
				t.Fatal(err)
			}
			if tt.name == "thick snapshot" {
				if err := e.svc.RemoveLV(t.Context(), "src", "thin"); err != nil {
					t.Fatal(err)
				}
				e.create("src", "thick", gib)
			}
			e.fake.Reset()
			if err := tt.do(e); err != nil {
				t.Fatal(err)
			}
			if n, calls := e.fake.Count(""), e.fake.Calls(); n != 1 || e.fake.Count("lvcreate") != 1 {
				t.Errorf("ran %d lvm commands, want exactly 1 lvcreate: %v", n, calls)
			}
		})
	}
}

func TestCreateLVIdempotent(t *testing.T) {
	e := newEnv(t, testConfig())
	first := e.create("a", "thick", gib-1)
	free := e.free("thick")
	e.fake.Reset()
	again := e.create("a", "thick", gib) // rounds to the same extents
	if e.fake.Count("") != 0 {
		t.Errorf("repeated create ran %v", e.fake.Calls())
	}
	if again.Size != first.Size || again.Size != gib || e.free("thick") != free {
		t.Errorf("repeat = %+v, first %+v", again, first)
	}
	tests := []struct {
		name string
		req  lvmd.CreateLVRequest
		want error
	}{
		{"other size", lvmd.CreateLVRequest{Name: "a", DeviceClass: "thick", Size: 2 * gib}, lvmd.ErrAlreadyExists},
		{"other class", lvmd.CreateLVRequest{Name: "a", DeviceClass: "thin", Size: gib}, lvmd.ErrAlreadyExists},
		{"the pool", lvmd.CreateLVRequest{Name: "pool", DeviceClass: "thick", Size: gib}, lvmd.ErrNotOurs},
		{"unknown class", lvmd.CreateLVRequest{Name: "b", DeviceClass: "x", Size: gib}, lvmd.ErrUnknownDeviceClass},
		{
			"unknown option class",
			lvmd.CreateLVRequest{Name: "b", Size: gib, LVCreateOptionClass: "x"},
			lvmd.ErrInvalidArgument,
		},
		{"bad name", lvmd.CreateLVRequest{Name: "-b", Size: gib}, lvmd.ErrInvalidArgument},
		{"zero size", lvmd.CreateLVRequest{Name: "b"}, lvmd.ErrInvalidArgument},
		{"bad tag", lvmd.CreateLVRequest{Name: "b", Size: gib, Tags: []string{"a b"}}, lvmd.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.fake.Reset()
			_, err := e.svc.CreateLV(t.Context(), tt.req)
			wantErr(t, err, tt.want)
			if e.fake.Count("lvcreate") != 0 {
				t.Errorf("ran %v", e.fake.Calls())
			}
		})
	}
}

func TestCreateLVInsufficientCapacity(t *testing.T) {
	e := newEnv(t, testConfig())
	// Checked against the cache: no command runs.
	for _, req := range []lvmd.CreateLVRequest{
		{Name: "big", DeviceClass: "thick", Size: vgFree - gib + 1},
		{Name: "big", DeviceClass: "thin", Size: 8*gib + 1},
	} {
		_, err := e.svc.CreateLV(t.Context(), req)
		wantErr(t, err, lvmd.ErrInsufficientCapacity)
	}
	if n := e.fake.Count(""); n != 0 {
		t.Errorf("ran %v", e.fake.Calls())
	}
	// Exactly the capacity fits.
	e.create("fits", "thin", 8*gib)
	e.create("fits-thick", "thick", vgFree-gib)
	e.checkNoDrift()

	// lvm2 refusing (e.g. another writer took the space) maps to the same
	// error and re-reads the state.
	e2 := newEnv(t, testConfig())
	e2.fake.FailNext("lvcreate", 5, `  Volume group "vg" has insufficient free space (10 extents): 256 required.`)
	_, err := e2.svc.CreateLV(t.Context(), lvmd.CreateLVRequest{Name: "a", DeviceClass: "thick", Size: gib})
	wantErr(t, err, lvmd.ErrInsufficientCapacity)
	if e2.fake.Count("fullreport") != 1 {
		t.Errorf("failed create did not refresh the state: %v", e2.fake.Calls())
	}
	if got := e2.free("thick"); got != vgFree-gib {
		t.Errorf("reservation leaked: free %d", got)
	}
}

func TestCreateLVLayouts(t *testing.T) {
	tests := []struct {
		name     string
		class    lvmd.DeviceClass
		size     uint64
		wantSize uint64
		wantArgs string
	}{
		{"striped rounds to full stripes", lvmd.DeviceClass{Stripe: ptr(uint(3)), StripeSize: "64k"}, 5 * mib, 12 * mib,
			"lvm lvcreate -y --wipesignatures y -n lv -L 12582912b -i 3 -I 64k --addtag lvms vg"},
		{"raid1", lvmd.DeviceClass{RAID: &lvmd.RAIDConfig{Type: lvm.RAID1, Mirrors: 1}}, gib, gib,
			"lvm lvcreate -y --wipesignatures y -n lv -L 1073741824b --type raid1 -m 1 --addtag lvms vg"},
		{"extra options", lvmd.DeviceClass{LVCreateOptions: []string{"--alloc", "anywhere"}}, mib, extent,
			"lvm lvcreate -y --wipesignatures y -n lv -L 4194304b --alloc anywhere --addtag lvms vg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := tt.class
			dc.Name, dc.VolumeGroup, dc.SpareGB = "c", "vg", ptr(uint64(0))
			e := newEnv(t, &lvmd.Config{DeviceClasses: []lvmd.DeviceClass{dc}})
			lv := e.create("lv", "c", tt.size)
			if lv.Size != tt.wantSize {
				t.Errorf("size = %d, want %d", lv.Size, tt.wantSize)
			}
			if calls := e.fake.Calls(); len(calls) != 1 || calls[0] != tt.wantArgs {
				t.Errorf("calls = %q\nwant %q", calls, tt.wantArgs)
			}
			e.checkNoDrift()
		})
	}
}

func TestOptionClassReplacesClassOptions(t *testing.T) {
	cfg := testConfig()
	cfg.DeviceClasses[0].Stripe = ptr(uint(2))
	cfg.LVCreateOptionClasses = []lvmd.LVCreateOptionClass{
		{Name: "mirror", Options: []string{"--type", "raid1", "-m", "1"}},
	}
	e := newEnv(t, cfg)
	_, err := e.svc.CreateLV(t.Context(), lvmd.CreateLVRequest{
		Name: "lv", DeviceClass: "thick", Size: gib, LVCreateOptionClass: "mirror", Tags: []string{"pvc=x"},
	})
	wantErr(t, err, nil)
	want := "lvm lvcreate -y --wipesignatures y -n lv -L 1073741824b --type raid1 -m 1 --addtag lvms --addtag pvc=x vg"
	if calls := e.fake.Calls(); len(calls) != 1 || calls[0] != want {
		t.Errorf("calls = %q", calls)
	}
}

func TestConcurrentCreatesReserveCapacity(t *testing.T) {
	e := newEnv(t, testConfig())
	// 8 GiB thin capacity, 12 creates of 1 GiB: exactly 8 succeed.
	var wg sync.WaitGroup
	errs := make([]error, 12)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = e.svc.CreateLV(
				t.Context(),
				lvmd.CreateLVRequest{Name: fmt.Sprintf("lv%d", i), DeviceClass: "thin", Size: gib},
			)
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		wantErr(t, err, lvmd.ErrInsufficientCapacity)
	}
	if ok != 8 || e.free("thin") != 0 {
		t.Errorf("%d creates succeeded, free %d; want 8 and 0", ok, e.free("thin"))
	}
	e.checkNoDrift()
}
