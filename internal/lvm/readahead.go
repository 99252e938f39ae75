package lvm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// ReadAhead is an LV's read-ahead as lvchange takes it: ReadAheadAuto, ReadAheadNone or a number
// of 512-byte sectors.
type ReadAhead string

// Read-ahead settings lvm2 names.
const (
	// ReadAheadAuto is lvm2's default: the kernel chooses (from the devices under the LV).
	ReadAheadAuto ReadAhead = "auto"
	// ReadAheadNone turns read-ahead off (0 sectors).
	ReadAheadNone ReadAhead = "none"
)

// maxReadAheadSectors is the largest read-ahead lvchange takes: lvm2 keeps it in 32 bits, with the
// top values meaning auto and none.
const maxReadAheadSectors = 1<<32 - 3

// ReadAheadSectors is a read-ahead of n 512-byte sectors (0: ReadAheadNone).
func ReadAheadSectors(n uint32) ReadAhead {
	if n == 0 {
		return ReadAheadNone
	}
	return ReadAhead(strconv.FormatUint(uint64(n), 10))
}

// Validate returns ErrInvalidArgument unless r is auto, none or a positive whole number of sectors
// that lvm2 can keep.
func (r ReadAhead) Validate() error {
	if r == ReadAheadAuto || r == ReadAheadNone {
		return nil
	}
	n, err := strconv.ParseUint(string(r), 10, 64)
	if err != nil || n == 0 || n > maxReadAheadSectors || strconv.FormatUint(n, 10) != string(r) {
		return fmt.Errorf("%w: read-ahead %q is not %q, %q or a positive number of 512-byte sectors up to %d",
			ErrInvalidArgument, string(r), ReadAheadAuto, ReadAheadNone, uint64(maxReadAheadSectors))
	}
	return nil
}

// SetReadAhead sets the read-ahead of an LV of an owned VG (`lvchange --readahead`). lvm2 keeps it
// in the VG metadata and sets it on the LV's device at once (a suspend and resume of the LV: in use
// it only holds IO for that moment) and at every later activation. A number of sectors that is not
// a multiple of the page size is rounded by lvm2 (up to one page, else down to a multiple). Asking
// for the read-ahead the LV has succeeds without change. lvm2 refuses to change the origin of a
// copy-on-write snapshot (ErrInUse).
func (c *Client) SetReadAhead(ctx context.Context, vg VG, name string, r ReadAhead) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("set read-ahead of LV %s/%s: %w", vg.Name, name, err)
	}
	err := c.lvCommand(ctx, vg, name, "set read-ahead ("+string(r)+") of LV", "lvchange", "--readahead", string(r))
	if errors.Is(err, ErrUnchanged) {
		return nil
	}
	return err
}

// pageSectors is the page size in 512-byte sectors, to which lvm2 rounds a read-ahead.
var pageSectors = uint64(os.Getpagesize()) / 512

// Effective is the read-ahead lvm2 keeps when asked for r: a number of sectors that is not a
// multiple of the page size is rounded up to one page when smaller, else down to a multiple.
func (r ReadAhead) Effective() ReadAhead {
	n, err := strconv.ParseUint(string(r), 10, 64)
	if err != nil || n == 0 || pageSectors == 0 || n%pageSectors == 0 {
		return r
	}
	if n < pageSectors {
		return ReadAhead(strconv.FormatUint(pageSectors, 10))
	}
	return ReadAhead(strconv.FormatUint(n/pageSectors*pageSectors, 10))
}

// parseReadAhead reads lv_read_ahead as `lvm fullreport --units b --nosuffix` prints it: "auto" or
// a number of bytes ("" when the report has no such column: unknown).
func parseReadAhead(v string) (ReadAhead, error) {
	if v == "" || v == string(ReadAheadAuto) {
		return ReadAhead(v), nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return "", fmt.Errorf("lv_read_ahead %q is not auto or a number of bytes", v)
	}
	return ReadAheadSectors(uint32(uint64(f) / 512)), nil
}

// SetReadAheadOp is `lvchange --readahead` (Client.SetReadAhead).
type SetReadAheadOp struct {
	VG, Name  string
	ReadAhead ReadAhead
}

func (op SetReadAheadOp) apply(s *State) error {
	i, err := s.lvIndex(op.VG, op.Name)
	if err != nil {
		return err
	}
	if s.hasSnapshot(op.VG, op.Name) {
		return refuse(ErrInUse, "Command on LV %s uses options that are invalid with LV properties: "+
			"lv_is_thick_origin .", s.LVs[i].FullName())
	}
	r := op.ReadAhead.Effective()
	if s.LVs[i].ReadAhead == r {
		return refuse(ErrUnchanged, "Read ahead is already %s for %q", r, op.Name)
	}
	s.LVs[i].ReadAhead = r
	return nil
}
