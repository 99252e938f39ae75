package thinmeta

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
)

// lvsJSON is `lvm lvs` output of VG vg: a thin pool with 64 KiB chunks, a
// volume, two snapshots of it, another volume's snapshot, a second pool's
// volume and a thick LV.
const lvsJSON = `{"report":[{"lv":[
 {"lv_name":"pool","lv_attr":"twi-aotz--","lv_size":"1073741824","pool_lv":"","origin":"","thin_id":"","chunk_size":"65536"},
 {"lv_name":"pool2","lv_attr":"twi-aotz--","lv_size":"1073741824","pool_lv":"","origin":"","thin_id":"","chunk_size":"1048576"},
 {"lv_name":"vol","lv_attr":"Vwi-a-tz--","lv_size":"268435456","pool_lv":"pool","origin":"","thin_id":"1","chunk_size":"0"},
 {"lv_name":"s1","lv_attr":"Vwi---tz-k","lv_size":"268435456","pool_lv":"pool","origin":"vol","thin_id":"2","chunk_size":"0"},
 {"lv_name":"s2","lv_attr":"Vwi---tz-k","lv_size":"268435456","pool_lv":"pool","origin":"vol","thin_id":"3","chunk_size":"0"},
 {"lv_name":"o1","lv_attr":"Vwi---tz-k","lv_size":"268435456","pool_lv":"pool","origin":"other","thin_id":"5","chunk_size":"0"},
 {"lv_name":"p2","lv_attr":"Vwi-a-tz--","lv_size":"268435456","pool_lv":"pool2","origin":"vol","thin_id":"1","chunk_size":"0"},
 {"lv_name":"thick","lv_attr":"-wi-a-----","lv_size":"8388608","pool_lv":"","origin":"","thin_id":"","chunk_size":"0"}
]}]}`

const (
	tpool   = "vg-pool-tpool"
	tmeta   = "/dev/mapper/vg-pool_tmeta"
	free    = "0 2097152 thin-pool 4 115/1024 8/16384 - rw no_discard_passdown queue_if_no_space - 256\n"
	holding = "0 2097152 thin-pool 4 116/1024 8/16384 50 rw no_discard_passdown queue_if_no_space - 256\n"
)

func fixture(t *testing.T) (*exectest.Fake, *Reader, []Thin) {
	t.Helper()
	f := exectest.New()
	f.On(exectest.OK(lvsJSON), "lvm", LookupArgs("vg")...)
	r := New(f)
	ts, err := r.Lookup(t.Context(), "vg", "s1", "s2", "o1", "p2")
	if err != nil {
		t.Fatal(err)
	}
	f.Reset()
	return f, r, ts
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLookup(t *testing.T) {
	_, r, ts := fixture(t)
	want := Thin{
		Name:      "s1",
		Pool:      Pool{VG: "vg", Name: "pool"},
		ThinID:    2,
		Origin:    "vol",
		Size:      256 << 20,
		ChunkSize: 64 << 10,
	}
	if ts[0] != want || ts[3].ChunkSize != 1<<20 {
		t.Errorf("Lookup = %+v", ts)
	}
	for name, wantErr := range map[string]error{"thick": ErrNotThin, "pool": ErrNotThin, "nope": ErrNotFound} {
		if _, err := r.Lookup(t.Context(), "vg", name); !errors.Is(err, wantErr) {
			t.Errorf("Lookup(%s) = %v, want %v", name, err, wantErr)
		}
	}
	if _, err := r.Lookup(t.Context(), "-vg", "x"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("bad VG name: %v", err)
	}
}

func TestDelta(t *testing.T) {
	f, r, ts := fixture(t)
	f.On(
		exectest.OK(readFile(t, "delta-0.9.0.xml")),
		"thin_delta",
		"--metadata-snap",
		"--snap1",
		"2",
		"--snap2",
		"3",
		tmeta,
	)
	f.On(exectest.OK(""), "dmsetup", "message", tpool, "0", "reserve_metadata_snap")
	f.On(exectest.OK(""), "dmsetup", "message", tpool, "0", "release_metadata_snap")
	var got []Range
	if err := r.Delta(
		t.Context(),
		ts[0],
		ts[1],
		func(rg Range) error { got = append(got, rg); return nil },
	); err != nil {
		t.Fatal(err)
	}
	if want := blocks(11, 2, 100, 1, 200, 1); !slices.Equal(got, want) {
		t.Errorf("Delta = %v, want %v", got, want)
	}
	if d := exectest.Diff(f,
		"dmsetup message vg-pool-tpool 0 reserve_metadata_snap",
		"thin_delta --metadata-snap --snap1 2 --snap2 3 "+tmeta,
		"dmsetup message vg-pool-tpool 0 release_metadata_snap"); d != "" {
		t.Error(d)
	}
}

func TestDeltaRefusals(t *testing.T) {
	f, r, ts := fixture(t)
	noop := func(Range) error { return nil }
	if err := r.Delta(t.Context(), ts[2], ts[1], noop); !errors.Is(err, ErrDifferentVolumes) {
		t.Errorf("other volume: %v", err)
	}
	if err := r.Delta(t.Context(), ts[3], ts[1], noop); !errors.Is(err, ErrDifferentPools) {
		t.Errorf("other pool: %v", err)
	}
	if err := r.Delta(t.Context(), Thin{Name: "x"}, ts[1], noop); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("not looked up: %v", err)
	}
	if len(f.Calls()) != 0 {
		t.Errorf("refusals ran commands: %v", f.Lines())
	}
}

// Every way a read ends releases the metadata snapshot it reserved.
func TestReadAlwaysReleases(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		dump    exectest.Response
		reserve exectest.Response
		fn      func(Range) error
		want    error
		release bool
	}{
		{"ok", exectest.OK(readFile(t, "dump-dev2-0.9.0.xml")), exectest.OK(""), nil, nil, true},
		{"stop", exectest.OK(readFile(t, "dump-dev2-0.9.0.xml")), exectest.OK(""),
			func(Range) error { return ErrStop }, nil, true},
		{"callback error", exectest.OK(readFile(t, "dump-dev2-0.9.0.xml")), exectest.OK(""),
			func(Range) error { return boom }, boom, true},
		{
			"unknown device",
			exectest.OK(readFile(t, "dump-missing-dev-0.9.0.xml")),
			exectest.OK(""),
			nil,
			ErrNotFound,
			true,
		},
		{"tool fails", exectest.Fail(1, "no current metadata snap"), exectest.OK(""), nil, nil, true},
		{"held elsewhere", exectest.OK(""),
			exectest.Fail(1, "device-mapper: message ioctl on vg-pool-tpool  failed: Device or resource busy"),
			nil, ErrMetadataSnapshotHeld, false},
		{
			"pool inactive",
			exectest.OK(""),
			exectest.Fail(1, "Device vg-pool-tpool does not exist."),
			nil,
			ErrPoolInactive,
			false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, r, ts := fixture(t)
			f.On(tc.reserve, "dmsetup", "message", tpool, "0", "reserve_metadata_snap")
			f.On(exectest.OK(""), "dmsetup", "message", tpool, "0", "release_metadata_snap")
			f.On(tc.dump, "thin_dump", "--metadata-snap", "--dev-id", "2", tmeta)
			fn := tc.fn
			if fn == nil {
				fn = func(Range) error { return nil }
			}
			err := r.Allocated(t.Context(), ts[0], fn)
			if tc.want != nil && !errors.Is(err, tc.want) || tc.want == nil && tc.name != "tool fails" && err != nil {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if tc.name == "tool fails" && exec.ExitCode(err) != 1 {
				t.Errorf("err = %v, want the tool's exit status", err)
			}
			released := slices.Contains(f.Lines(), "dmsetup message vg-pool-tpool 0 release_metadata_snap")
			if released != tc.release {
				t.Errorf("released = %v, calls %v", released, f.Lines())
			}
		})
	}
}

// A read that outlives the hold deadline ends with ErrHoldDeadline and
// still releases (on a context of its own).
func TestHoldDeadline(t *testing.T) {
	f, _, ts := fixture(t)
	r := New(f, WithMaxHold(20*time.Millisecond))
	f.On(exectest.OK(""), "dmsetup", "message", tpool, "0", "reserve_metadata_snap")
	f.On(exectest.OK(""), "dmsetup", "message", tpool, "0", "release_metadata_snap")
	f.Handler = func(c exectest.Call) exectest.Response {
		time.Sleep(50 * time.Millisecond)
		return exectest.Response{Err: context.DeadlineExceeded}
	}
	err := r.Allocated(t.Context(), ts[0], func(Range) error { return nil })
	if !errors.Is(err, ErrHoldDeadline) {
		t.Errorf("err = %v", err)
	}
	if f.Lines()[len(f.Lines())-1] != "dmsetup message vg-pool-tpool 0 release_metadata_snap" {
		t.Errorf("not released: %v", f.Lines())
	}
}

// Reads of one pool never overlap; waiting honours the context.
func TestSerialisedPerPool(t *testing.T) {
	f, r, ts := fixture(t)
	var inside, most atomic.Int32
	f.Handler = func(c exectest.Call) exectest.Response {
		if c.Name == "thin_dump" {
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(5 * time.Millisecond)
			inside.Add(-1)
			return exectest.OK(readFile(t, "dump-dev2-0.9.0.xml"))
		}
		return exectest.OK("")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := r.Allocated(t.Context(), ts[0], func(Range) error { return nil }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d reads of one pool at once", most.Load())
	}
	unlock, err := r.locks.lock(t.Context(), ts[0].Pool)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := r.Allocated(ctx, ts[0], func(Range) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting on a busy pool: %v", err)
	}
}

func TestRecover(t *testing.T) {
	f := exectest.New()
	r := New(f)
	p, q := Pool{VG: "vg", Name: "pool"}, Pool{VG: "my-vg", Name: "thin-pool"}
	gone := Pool{VG: "vg", Name: "gone"}
	f.On(exectest.OK(holding), "dmsetup", "status", tpool)
	f.On(exectest.OK(free), "dmsetup", "status", "my--vg-thin--pool-tpool")
	f.On(exectest.Fail(1, "Device does not exist.\nCommand failed."), "dmsetup", "status", "vg-gone-tpool")
	f.On(exectest.OK(""), "dmsetup", "message", tpool, "0", "release_metadata_snap")
	released, err := r.Recover(t.Context(), p, q, gone)
	if err != nil || !slices.Equal(released, []Pool{p}) {
		t.Errorf("Recover = %v, %v", released, err)
	}
	f.On(exectest.OK("0 8192 linear \n"), "dmsetup", "status", "vg-lin-tpool")
	if _, err := r.Recover(
		t.Context(),
		Pool{VG: "vg", Name: "lin"},
		Pool{VG: "vg", Name: "-x"},
	); !errors.Is(
		err,
		ErrMalformed,
	) ||
		!errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Recover of a non-pool and a bad name = %v", err)
	}
}

func TestParsePoolStatus(t *testing.T) {
	for line, want := range map[string]string{free: "", holding: "50"} {
		s, err := ParsePoolStatus(line)
		if err != nil || s.HeldRoot != want || s.Held() != (want != "") {
			t.Errorf("%q: %+v, %v", line, s, err)
		}
	}
	if _, err := ParsePoolStatus("0 2097152 thin-pool Fail"); !errors.Is(err, ErrPoolInactive) {
		t.Errorf("failed pool: %v", err)
	}
}

func TestDMNames(t *testing.T) {
	p := Pool{VG: "my-vg", Name: "thin-pool"}
	if p.TPool() != "my--vg-thin--pool-tpool" || p.TMeta() != "/dev/mapper/my--vg-thin--pool_tmeta" {
		t.Errorf("%s %s", p.TPool(), p.TMeta())
	}
}
