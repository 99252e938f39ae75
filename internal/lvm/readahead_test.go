package lvm

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
)

func TestReadAheadValidate(t *testing.T) {
	for _, tt := range []struct {
		in ReadAhead
		ok bool
	}{
		{ReadAheadAuto, true}, {ReadAheadNone, true}, {"8", true}, {"2048", true}, {"4294967293", true},
		{"", false}, {"0", false}, {"-8", false}, {"08", false}, {"1k", false}, {"4294967294", false},
		{"AUTO", false}, {" 8", false},
	} {
		err := tt.in.Validate()
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Validate(%q) = %v; want ok %t", tt.in, err, tt.ok)
		}
	}
	if ReadAheadSectors(0) != ReadAheadNone || ReadAheadSectors(256) != "256" {
		t.Errorf("ReadAheadSectors(0), (256) = %q, %q", ReadAheadSectors(0), ReadAheadSectors(256))
	}
}

func TestReadAheadEffective(t *testing.T) {
	page := uint64(os.Getpagesize()) / 512
	p := func(n uint64) ReadAhead { return ReadAhead(strconv.FormatUint(n, 10)) }
	for _, tt := range []struct{ in, want ReadAhead }{
		{ReadAheadAuto, ReadAheadAuto}, {ReadAheadNone, ReadAheadNone},
		{"1", p(page)}, {p(page), p(page)}, {p(4 * page), p(4 * page)}, {p(4*page + 1), p(4 * page)},
		{p(5*page - 1), p(4 * page)},
	} {
		if got := tt.in.Effective(); got != tt.want {
			t.Errorf("Effective(%q) = %q, want %q (page of %d sectors)", tt.in, got, tt.want, page)
		}
	}
}

func TestParseReadAhead(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want ReadAhead
		ok   bool
	}{
		{"", "", true}, {"auto", ReadAheadAuto, true}, {"0", ReadAheadNone, true}, {"131072", "256", true},
		{"131072.00", "256", true}, {"-1", "", false}, {"lots", "", false},
	} {
		got, err := parseReadAhead(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("parseReadAhead(%q) = %q, %v; want %q, ok %t", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestSetReadAhead(t *testing.T) {
	f := exectest.New().
		On(exectest.OK(""), "lvm", CommandArgs("lvchange", "--readahead", "2048", "vg1/lv")...).
		On(exectest.Fail(5, `  Read ahead is already auto for "lv2"`),
			"lvm", CommandArgs("lvchange", "--readahead", "auto", "vg1/lv2")...).
		On(exectest.Fail(5, `  Failed to find logical volume "vg1/gone"`),
			"lvm", CommandArgs("lvchange", "--readahead", "none", "vg1/gone")...)
	c := New(f)
	ctx := t.Context()
	if err := c.SetReadAhead(ctx, ours, "lv", "2048"); err != nil {
		t.Errorf("SetReadAhead(2048) = %v", err)
	}
	if err := c.SetReadAhead(ctx, ours, "lv2", ReadAheadAuto); err != nil {
		t.Errorf("SetReadAhead to the read-ahead the LV has = %v, want success", err)
	}
	if err := c.SetReadAhead(ctx, ours, "gone", ReadAheadNone); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetReadAhead of a missing LV = %v, want ErrNotFound", err)
	}
	if err := c.SetReadAhead(ctx, ours, "lv", "1k"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("SetReadAhead(1k) = %v, want ErrInvalidArgument", err)
	}
	if err := c.SetReadAhead(ctx, VG{Name: "home"}, "lv", "8"); err == nil {
		t.Error("SetReadAhead on a VG that is not ours succeeded")
	}
}

func TestSetReadAheadOp(t *testing.T) {
	s := &State{VGs: []VG{{Name: "vg"}}, LVs: []LV{{Name: "a", VGName: "vg", ReadAhead: ReadAheadAuto}}}
	if err := s.Apply(SetReadAheadOp{VG: "vg", Name: "a", ReadAhead: "1"}); err != nil {
		t.Fatal(err)
	}
	if lv, _ := s.LV("vg", "a"); lv.ReadAhead != ReadAheadSectors(uint32(os.Getpagesize()/512)) {
		t.Errorf("read-ahead after asking for 1 sector = %q, want one page", lv.ReadAhead)
	}
	if err := s.Apply(SetReadAheadOp{VG: "vg", Name: "a", ReadAhead: "1"}); !errors.Is(err, ErrUnchanged) {
		t.Errorf("the same read-ahead again = %v, want ErrUnchanged (lvm2 refuses it)", err)
	}
	if err := s.Apply(SetReadAheadOp{VG: "vg", Name: "b", ReadAhead: "8"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("read-ahead of a missing LV = %v, want ErrNotFound", err)
	}
}

// TestSetReadAheadOfACopyOnWriteOrigin: lvm2 refuses it (measured in TestGuestModelFollowsLVM2), and
// so does the model.
func TestSetReadAheadOfACopyOnWriteOrigin(t *testing.T) {
	s := &State{VGs: []VG{{Name: "vg"}}, LVs: []LV{
		{Name: "a", VGName: "vg", ReadAhead: ReadAheadAuto},
		{Name: "s", VGName: "vg", Origin: "a", Attr: LVAttr{VolumeType: VolumeTypeSnapshot}},
	}}
	if err := s.Apply(SetReadAheadOp{VG: "vg", Name: "a", ReadAhead: "8"}); !errors.Is(err, ErrInUse) {
		t.Errorf("read-ahead of the origin of a copy-on-write snapshot = %v, want ErrInUse", err)
	}
}
