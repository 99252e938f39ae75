package thinmeta

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// Thin is a thin volume as Delta and Allocated need it.
type Thin struct {
	// Name is the LV name.
	Name string
	// Pool is the thin pool holding the volume.
	Pool Pool
	// ThinID is the thin device id inside the pool (lvs -o thin_id).
	ThinID uint64
	// Origin is the LV this one is a snapshot of ("" when it is none, or the
	// origin has been removed).
	Origin string
	// Size is the virtual size in bytes.
	Size uint64
	// ChunkSize is the pool's chunk size in bytes: the block size of ranges.
	ChunkSize uint64
}

// String renders t as vg/lv.
func (t Thin) String() string { return t.Pool.VG + "/" + t.Name }

func (t Thin) check() error {
	if t.ThinID == 0 || t.ChunkSize == 0 {
		return fmt.Errorf("%s: %w: no thin id or chunk size (use Lookup)", t, ErrInvalidArgument)
	}
	return t.Pool.validate()
}

// checkPair refuses a delta of two thin volumes that are not snapshots of
// one volume in one pool.
func checkPair(base, target Thin) error {
	if err := base.check(); err != nil {
		return err
	}
	if err := target.check(); err != nil {
		return err
	}
	if base.Pool != target.Pool {
		return fmt.Errorf("base %s in pool %s, target %s in pool %s: %w",
			base, base.Pool, target, target.Pool, ErrDifferentPools)
	}
	same := base.Origin != "" && base.Origin == target.Origin ||
		base.Origin == target.Name || target.Origin == base.Name
	if !same {
		return fmt.Errorf("base %s (origin %q), target %s (origin %q): %w",
			base, base.Origin, target, target.Origin, ErrDifferentVolumes)
	}
	return nil
}

// lvColumns are the lvs fields Lookup reads.
const lvColumns = "lv_name,lv_attr,lv_size,pool_lv,origin,thin_id,chunk_size"

// LookupArgs are the lvm arguments Lookup runs (for fakes).
func LookupArgs(vg string) []string {
	return []string{"lvs", "--reportformat", "json", "--units", "b", "--nosuffix", "-o", lvColumns, vg}
}

// Lookup reads thin volumes names of VG vg with one `lvm lvs` of the VG.
// An LV that is not a thin volume is ErrNotThin, a missing one ErrNotFound.
func (r *Reader) Lookup(ctx context.Context, vg string, names ...string) ([]Thin, error) {
	if err := lvm.ValidName(vg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	var rows []lvRow
	err := r.lvm.Read(ctx, func(rd io.Reader) error {
		var rep struct {
			Report []struct {
				LV []lvRow `json:"lv"`
			} `json:"report"`
		}
		if err := json.NewDecoder(rd).Decode(&rep); err != nil {
			return fmt.Errorf("decode lvs: %w", err)
		}
		for _, p := range rep.Report {
			rows = append(rows, p.LV...)
		}
		return nil
	}, LookupArgs(vg)...)
	if err != nil {
		if exec.StderrContains(err, "not found") {
			return nil, fmt.Errorf("VG %s: %w: %w", vg, ErrNotFound, err)
		}
		return nil, fmt.Errorf("look up thin volumes in VG %s: %w", vg, err)
	}
	out := make([]Thin, 0, len(names))
	for _, n := range names {
		t, err := thinOf(vg, n, rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// lvRow is one lvs JSON row; lvm2's "json" format prints every value as a
// string.
type lvRow struct {
	Name      string `json:"lv_name"`
	Attr      string `json:"lv_attr"`
	Size      string `json:"lv_size"`
	PoolLV    string `json:"pool_lv"`
	Origin    string `json:"origin"`
	ThinID    string `json:"thin_id"`
	ChunkSize string `json:"chunk_size"`
}

func find(rows []lvRow, name string) (lvRow, bool) {
	for _, r := range rows {
		if r.Name == name {
			return r, true
		}
	}
	return lvRow{}, false
}

func thinOf(vg, name string, rows []lvRow) (Thin, error) {
	row, ok := find(rows, name)
	if !ok {
		return Thin{}, fmt.Errorf("LV %s/%s: %w", vg, name, ErrNotFound)
	}
	attr, err := lvm.ParseLVAttr(row.Attr)
	if err != nil {
		return Thin{}, fmt.Errorf("LV %s/%s: %w: %w", vg, name, ErrMalformed, err)
	}
	if !attr.IsThin() || row.PoolLV == "" {
		return Thin{}, fmt.Errorf("LV %s/%s (attr %s): %w", vg, name, row.Attr, ErrNotThin)
	}
	pool, ok := find(rows, row.PoolLV)
	if !ok {
		return Thin{}, fmt.Errorf("pool %s/%s of %s: %w", vg, row.PoolLV, name, ErrNotFound)
	}
	if pa, err := lvm.ParseLVAttr(pool.Attr); err != nil || !pa.IsThinPool() {
		return Thin{}, fmt.Errorf("pool %s/%s (attr %s): %w", vg, row.PoolLV, pool.Attr, ErrNotThin)
	}
	t := Thin{Name: name, Pool: Pool{VG: vg, Name: row.PoolLV}, Origin: row.Origin}
	for _, f := range []struct {
		dst   *uint64
		field string
		v     string
	}{{&t.ThinID, "thin_id", row.ThinID}, {&t.Size, "lv_size", row.Size}, {&t.ChunkSize, "chunk_size", pool.ChunkSize}} {
		if *f.dst, err = strconv.ParseUint(f.v, 10, 64); err != nil || *f.dst == 0 {
			return Thin{}, fmt.Errorf("LV %s/%s: %w: %s %q", vg, name, ErrMalformed, f.field, f.v)
		}
	}
	return t, nil
}
