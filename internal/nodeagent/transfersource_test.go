package nodeagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

// tsLVs is a fake lvmd: LVs by device class, device nodes present or not, activations recorded.
type tsLVs struct {
	classes   []lvmd.Capacity
	lvs       map[string]lvmd.LV // by class + "/" + name
	present   map[string]bool    // device paths
	activated []string
}

func (f *tsLVs) Capacities(context.Context) ([]lvmd.Capacity, error) { return f.classes, nil }

func (f *tsLVs) GetLV(_ context.Context, name, class string) (lvmd.LV, error) {
	lv, ok := f.lvs[class+"/"+name]
	if !ok {
		return lvmd.LV{}, fmt.Errorf("get LV %s: %w", name, lvmd.ErrNotFound)
	}
	return lv, nil
}

func (f *tsLVs) ActivateLV(_ context.Context, name, class string) error {
	lv := f.lvs[class+"/"+name]
	f.activated = append(f.activated, lv.VolumeGroup+"/"+name)
	f.present[lv.Path] = true
	return nil
}

func (f *tsLVs) stat(path string) error {
	if f.present[path] {
		return nil
	}
	return fs.ErrNotExist
}

// tsMeta is fake thin metadata: the thin LVs it knows all map ranges; it counts the listings.
type tsMeta struct {
	thins    map[string]thinmeta.Thin
	ranges   []thinmeta.Range
	err      error
	listings int
}

func (f *tsMeta) Lookup(_ context.Context, vg string, names ...string) ([]thinmeta.Thin, error) {
	var out []thinmeta.Thin
	for _, n := range names {
		t, ok := f.thins[n]
		if !ok || t.Pool.VG != vg {
			return nil, fmt.Errorf("LV %s/%s: %w", vg, n, thinmeta.ErrNotFound)
		}
		out = append(out, t)
	}
	return out, nil
}

func (f *tsMeta) Allocated(_ context.Context, _ thinmeta.Thin, fn func(thinmeta.Range) error) error {
	f.listings++
	if f.err != nil {
		return f.err
	}
	for _, r := range f.ranges {
		if err := fn(r); errors.Is(err, thinmeta.ErrStop) {
			return nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

// tsDevice is a device that reads zeros and records its closing.
type tsDevice struct {
	*bytes.Reader
	closed *bool
}

func (d tsDevice) Close() error { *d.closed = true; return nil }

const tsMiB = uint64(1) << 20

// newTransferSources returns TransferSources over VG vg (classes thick and thin) and VG vg2 (class
// far): LVs thick-lv (8 MiB), thin-lv (16 MiB, mapping meta's ranges), snap (thin, 16 MiB, device
// missing), unmapped (thin, unknown to the pool's metadata) and far-lv (in vg2).
func newTransferSources(meta *tsMeta, batch int) (*TransferSources, *tsLVs, map[string]*bool) {
	lvs := &tsLVs{
		classes: []lvmd.Capacity{
			{DeviceClass: "thick", VolumeGroup: "vg"},
			{DeviceClass: "thin", VolumeGroup: "vg"},
			{DeviceClass: "far", VolumeGroup: "vg2"},
		},
		lvs:     map[string]lvmd.LV{},
		present: map[string]bool{},
	}
	add := func(class, vg, name, pool string, size uint64, present bool) {
		path := "/dev/" + vg + "/" + name
		lvs.lvs[class+"/"+name] = lvmd.LV{
			Name: name, DeviceClass: class, VolumeGroup: vg, Size: size, Path: path, ThinPool: pool,
		}
		lvs.present[path] = present
	}
	add("thick", "vg", "thick-lv", "", 8*tsMiB, true)
	add("thin", "vg", "thin-lv", "pool", 16*tsMiB, true)
	add("thin", "vg", "snap", "pool", 16*tsMiB, false)
	add("thin", "vg", "unmapped", "pool", 16*tsMiB, true)
	add("far", "vg2", "far-lv", "", 8*tsMiB, true)
	meta.thins = map[string]thinmeta.Thin{}
	for _, n := range []string{"thin-lv", "snap"} {
		meta.thins[n] = thinmeta.Thin{Name: n, Pool: thinmeta.Pool{VG: "vg", Name: "pool"}, ThinID: 1,
			Size: 16 * tsMiB, ChunkSize: 64 << 10}
	}
	closed := map[string]*bool{}
	ts := NewTransferSources(lvs, meta)
	ts.batch = batch
	ts.vols.stat = lvs.stat
	ts.open = func(path string) (transferDevice, error) {
		for _, lv := range lvs.lvs {
			if lv.Path == path && lvs.present[path] {
				closed[path] = new(bool)
				return tsDevice{Reader: bytes.NewReader(make([]byte, lv.Size)), closed: closed[path]}, nil
			}
		}
		return nil, fs.ErrNotExist
	}
	return ts, lvs, closed
}

func tsRange(offset, length uint64) thinmeta.Range {
	return thinmeta.Range{Offset: offset, Length: length}
}

// listRanges returns what src.Ranges lists.
func listRanges(src transfer.Source) ([]transfer.Range, error) {
	var out []transfer.Range
	err := src.Ranges(func(r transfer.Range) error { out = append(out, r); return nil })
	return out, err
}

func TestTransferSourcesOpen(t *testing.T) {
	k := uint64(64 << 10)
	five := []thinmeta.Range{tsRange(0, k), tsRange(2*k, k), tsRange(4*k, 3*k), tsRange(8*k, k), tsRange(10*k, 6*k)}
	// Adjacent ranges (as a listing that did not merge them would give).
	adjacent := []thinmeta.Range{tsRange(0, k), tsRange(k, k), tsRange(2*k, k), tsRange(5*k, k)}
	tests := []struct {
		name          string
		vol           transfer.Volume
		batch         int
		ranges        []thinmeta.Range
		want          []transfer.Range
		wantSize      uint64
		wantListings  int
		wantActivated []string
		wantErr       error
	}{
		{name: "thick: the whole device", vol: transfer.Volume{Class: "thick", LV: "thick-lv"}, batch: 2,
			ranges: five, want: []transfer.Range{{Length: 8 * tsMiB}}, wantSize: 8 * tsMiB},
		{name: "thin: batches of 2 of 5 ranges", vol: transfer.Volume{Class: "thin", LV: "thin-lv"}, batch: 2,
			ranges: five, want: five, wantSize: 16 * tsMiB, wantListings: 3},
		{name: "thin: full batches, then an empty listing", vol: transfer.Volume{Class: "thin", LV: "thin-lv"},
			batch: 2, ranges: adjacent, want: adjacent, wantSize: 16 * tsMiB, wantListings: 3},
		{name: "thin: one listing", vol: transfer.Volume{Class: "thin", LV: "thin-lv"}, batch: DefaultTransferBatch,
			ranges: five, want: five, wantSize: 16 * tsMiB, wantListings: 1},
		{name: "any class", vol: transfer.Volume{LV: "thick-lv"}, batch: 2,
			ranges: five, want: []transfer.Range{{Length: 8 * tsMiB}}, wantSize: 8 * tsMiB},
		{name: "thin: nothing allocated", vol: transfer.Volume{Class: "thin", LV: "thin-lv"}, batch: 2,
			wantSize: 16 * tsMiB, wantListings: 1},
		{name: "thin snapshot without its device node: activated", vol: transfer.Volume{Class: "thin", LV: "snap"},
			batch: 3, ranges: five, want: five, wantSize: 16 * tsMiB, wantListings: 2,
			wantActivated: []string{"vg/snap"}},
		{name: "unknown LV", vol: transfer.Volume{Class: "thin", LV: "nope"}, wantErr: transfer.ErrNotFound},
		{
			name:    "LV in another class",
			vol:     transfer.Volume{Class: "thick", LV: "far-lv"},
			wantErr: transfer.ErrNotFound,
		},
		{name: "LV named in another class", vol: transfer.Volume{Class: "far", LV: "thick-lv"},
			wantErr: transfer.ErrNotFound},
		{name: "thin LV missing in the pool's metadata", vol: transfer.Volume{Class: "thin", LV: "unmapped"},
			wantErr: transfer.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta := &tsMeta{ranges: tt.ranges}
			ts, lvs, closed := newTransferSources(meta, tt.batch)
			src, err := ts.Open(t.Context(), tt.vol)
			if !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) {
				t.Fatalf("Open(%+v): %v, want %v", tt.vol, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			got, err := listRanges(src)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("ranges: %v, %v; want %v", got, err, tt.want)
			}
			if src.Size != tt.wantSize || meta.listings != tt.wantListings {
				t.Errorf("size %d after %d listings, want %d after %d", src.Size, meta.listings, tt.wantSize,
					tt.wantListings)
			}
			if !slices.Equal(lvs.activated, tt.wantActivated) {
				t.Errorf("activated %v, want %v", lvs.activated, tt.wantActivated)
			}
			path := "/dev/vg/" + tt.vol.LV
			if err := src.Release(); err != nil || !*closed[path] {
				t.Errorf("Release: %v, device closed: %t", err, *closed[path])
			}
		})
	}
}

func TestTransferSourcesRangesErrors(t *testing.T) {
	k := uint64(64 << 10)
	stop := errors.New("network down")
	listErr := errors.New("thin_dump failed")
	tests := []struct {
		name         string
		listErr      error
		failAt       int // fn fails on this call (1-based); 0: never
		wantErr      error
		wantCalls    int
		wantListings int
	}{
		{name: "fn error in the first batch", failAt: 1, wantErr: stop, wantCalls: 1, wantListings: 1},
		{name: "fn error in the second batch", failAt: 3, wantErr: stop, wantCalls: 3, wantListings: 2},
		{name: "listing error", listErr: listErr, wantErr: listErr, wantListings: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta := &tsMeta{
				ranges: []thinmeta.Range{tsRange(0, k), tsRange(2*k, k), tsRange(4*k, k), tsRange(6*k, k)},
				err:    tt.listErr,
			}
			ts, _, _ := newTransferSources(meta, 2)
			src, err := ts.Open(t.Context(), transfer.Volume{Class: "thin", LV: "thin-lv"})
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			err = src.Ranges(func(transfer.Range) error {
				calls++
				if calls == tt.failAt {
					return stop
				}
				return nil
			})
			if !errors.Is(err, tt.wantErr) || calls != tt.wantCalls || meta.listings != tt.wantListings {
				t.Errorf("Ranges: %v after %d calls, %d listings; want %v after %d, %d", err, calls,
					meta.listings, tt.wantErr, tt.wantCalls, tt.wantListings)
			}
		})
	}
}
