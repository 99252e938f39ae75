package lvm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseReportCaptured(t *testing.T) {
	// Captured from lvm2 2.03.16 with reportArgs: VG vgt (tagged lvms) on
	// two 1 GiB PVs with a linear and a striped LV, plus an orphan PV.
	data, err := os.ReadFile(filepath.Join("testdata", "fullreport-linear-striped-orphan.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseReport(data)
	if err != nil {
		t.Fatal(err)
	}
	vg, ok := s.VG("vgt")
	if !ok {
		t.Fatal("VG vgt missing")
	}
	if vg.Size != 2139095040 || vg.Free != 1925185536 || vg.ExtentSize != 4194304 || !vg.Owned() {
		t.Errorf("vg = %+v", vg)
	}
	if len(s.PVs) != 3 || len(s.PVsOf("vgt")) != 2 {
		t.Fatalf("pvs = %+v", s.PVs)
	}
	orphan, ok := s.PV("/dev/loop2")
	if !ok || !orphan.Orphan() || orphan.Size != 536870912 {
		t.Errorf("orphan = %+v", orphan)
	}
	str, ok := s.LV("vgt", "str")
	if !ok {
		t.Fatal("LV str missing")
	}
	if str.Size != 109051904 || str.SegType() != "striped" || str.Segments[0].Stripes != 2 ||
		str.Segments[0].StripeSize != 65536 || !slices.Equal(str.Tags, []string{"bar", "foo"}) {
		t.Errorf("str = %+v", str)
	}
	if got := str.PVNames(); !slices.Equal(got, []string{"/dev/loop0", "/dev/loop1"}) {
		t.Errorf("PVNames = %v", got)
	}
	if str.Path != "/dev/vgt/str" || str.DMPath != "/dev/mapper/vgt-str" || str.FullName() != "vgt/str" {
		t.Errorf("paths = %q %q", str.Path, str.DMPath)
	}
	if len(s.LVsOf("vgt")) != 2 {
		t.Errorf("LVsOf = %v", s.LVsOf("vgt"))
	}
}

func TestParseReportTable(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		check   func(t *testing.T, s *State)
		wantErr string
	}{
		{
			name: "empty",
			json: `{"report":[]}`,
			check: func(t *testing.T, s *State) {
				if len(s.VGs)+len(s.PVs)+len(s.LVs) != 0 {
					t.Errorf("not empty: %+v", s)
				}
			},
		},
		{
			name: "thin pool and hidden LVs (lvm2 json strings)",
			json: `{"report":[{"vg":[{"vg_name":"vg1","vg_tags":"lvms,other","vg_size":"1073741824"}],
				"lv":[
				 {"lv_name":"pool","vg_name":"vg1","lv_uuid":"u1","lv_attr":"twi-aotz--","lv_size":"104857600","data_percent":"12.50","metadata_percent":"10.84","lv_metadata_size":"4194304"},
				 {"lv_name":"[pool_tdata]","vg_name":"vg1","lv_uuid":"u2","lv_attr":"Twi-ao----","lv_size":"104857600"},
				 {"lv_name":"thin","vg_name":"vg1","lv_uuid":"u3","lv_attr":"Vwi-a-tz--","lv_size":"1073741824","pool_lv":"pool","data_percent":"1.00"},
				 {"lv_name":"snap","vg_name":"vg1","lv_uuid":"u4","lv_attr":"Vri---tz-k","lv_size":"1073741824","pool_lv":"pool","origin":"thin"}],
				"seg":[{"lv_uuid":"u1","segtype":"thin-pool","chunk_size":"65536","devices":"pool_tdata(0)"}]}]}`,
			check: func(t *testing.T, s *State) {
				pool, _ := s.LV("vg1", "pool")
				if !pool.Attr.IsThinPool() || !pool.Attr.Active() || pool.DataPercent != 12.5 ||
					pool.MetadataPercent != 10.84 || pool.MetadataSize != 4194304 || pool.SegType() != "thin-pool" ||
					pool.Segments[0].ChunkSize != 65536 || len(pool.PVNames()) != 0 {
					t.Errorf("pool = %+v", pool)
				}
				tdata, _ := s.LV("vg1", "pool_tdata")
				if !tdata.Hidden {
					t.Errorf("tdata not hidden: %+v", tdata)
				}
				snap, _ := s.LV("vg1", "snap")
				if snap.Origin != "thin" || snap.PoolLV != "pool" || snap.Attr.Active() || !snap.Attr.SkipActive ||
					snap.Attr.Writable() {
					t.Errorf("snap = %+v", snap)
				}
				if got := len(s.LVsOf("vg1")); got != 3 {
					t.Errorf("visible LVs = %d, want 3", got)
				}
			},
		},
		{
			name: "json_std numbers, lists and nulls",
			json: `{"report":[{"vg":[{"vg_name":"vg1","vg_tags":["lvms"],"vg_size":2147483648,"vg_free":1.5e3,"pv_count":2}],
				"lv":[{"lv_name":"a","vg_name":"vg1","lv_attr":"-wi-a-----","lv_size":4194304,"data_percent":null,"lv_tags":["x","y"]}]}]}`,
			check: func(t *testing.T, s *State) {
				vg, _ := s.VG("vg1")
				if !vg.Owned() || vg.Size != 2147483648 || vg.Free != 1500 || vg.PVCount != 2 {
					t.Errorf("vg = %+v", vg)
				}
				lv, _ := s.LV("vg1", "a")
				if lv.Size != 4194304 || !slices.Equal(lv.Tags, []string{"x", "y"}) || lv.DataPercent != 0 {
					t.Errorf("lv = %+v", lv)
				}
			},
		},
		{name: "bad size", json: `{"report":[{"vg":[{"vg_name":"v","vg_size":"big"}]}]}`, wantErr: "vg_size"},
		{name: "negative size", json: `{"report":[{"pv":[{"pv_name":"/dev/x","pv_size":"-1"}]}]}`, wantErr: "pv_size"},
		{name: "bad attr", json: `{"report":[{"lv":[{"lv_name":"a","lv_attr":"-wi"}]}]}`, wantErr: "lv_attr"},
		{
			name:    "bad percent",
			json:    `{"report":[{"lv":[{"lv_name":"a","lv_attr":"-wi-a-----","data_percent":"NaN"}]}]}`,
			wantErr: "data_percent",
		},
		{name: "not json", json: `Volume group not found`, wantErr: "decode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseReport([]byte(tt.json))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

func TestParseLVAttr(t *testing.T) {
	tests := []struct {
		attr    string
		wantErr bool
		check   func(a LVAttr) bool
	}{
		{attr: "-wi-a-----", check: func(a LVAttr) bool {
			return a.VolumeType == VolumeTypePlain && a.Writable() && a.Active() && !a.IsOpen() && a.Healthy()
		}},
		{attr: "twi-aotz--", check: func(a LVAttr) bool {
			return a.IsThinPool() && a.IsOpen() && a.TargetType == TargetThin && a.Zero && a.Allocation == 'i'
		}},
		{attr: "Vri---tz-k", check: func(a LVAttr) bool {
			return a.IsThin() && !a.Writable() && !a.Active() && a.SkipActive
		}},
		{attr: "rwi-a-r---", check: func(a LVAttr) bool { return a.IsRAID() && a.TargetType == TargetRAID }},
		{attr: "swi-a-s---", check: func(a LVAttr) bool { return a.IsSnapshot() && a.TargetType == TargetSnapshot }},
		{attr: "owi-aos---", check: func(a LVAttr) bool { return a.VolumeType == VolumeTypeOrigin }},
		{attr: "-wi-s-----", check: func(a LVAttr) bool { return a.Suspended() && !a.Active() }},
		{attr: "twi-aotzD-", check: func(a LVAttr) bool { return a.Health == HealthOutOfDataSpace && !a.Healthy() }},
		{attr: "-wi-XX----", check: func(a LVAttr) bool { return a.State == StateUnknown && a.Open == 'X' }},
		{attr: "-wimao----", check: func(a LVAttr) bool { return a.FixedMinor }},
		{attr: "", wantErr: true},
		{attr: "-wi-a----", wantErr: true},
		{attr: "-wi-a------", wantErr: true},
		{attr: "-wi-a\x00----", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.attr, func(t *testing.T) {
			a, err := ParseLVAttr(tt.attr)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				return
			}
			if a.String() != tt.attr || !tt.check(a) {
				t.Errorf("parsed %q as %+v", tt.attr, a)
			}
		})
	}
}

func FuzzParseLVAttr(f *testing.F) {
	for _, s := range []string{"-wi-a-----", "twi-aotz--", "Vri---tz-k", "", "xxxxxxxxxxx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseLVAttr(s)
		if err != nil {
			return
		}
		// String writes the flags lvm2 documents ('m', 'z', 'k' or '-'), so it returns s when s uses
		// them, and otherwise an attribute that parses to the same value.
		again, err := ParseLVAttr(a.String())
		if len(s) != 10 || err != nil || again != a || byte(a.VolumeType) != s[0] || byte(a.State) != s[4] {
			t.Errorf("invariant broken for %q: %+v (again %+v, %v)", s, a, again, err)
		}
	})
}

func FuzzParseReport(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "fullreport-linear-striped-orphan.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	if guest, err := os.ReadFile(filepath.Join("testdata", "fullreport-guest-all-kinds.json")); err == nil {
		f.Add(guest)
	}
	f.Add(
		[]byte(
			`{"report":[{"vg":[{"vg_name":"v","vg_size":1e30,"vg_tags":["a"]}],"lv":[{"lv_name":"[x]","lv_attr":"Twi-ao----"}]}]}`,
		),
	)
	f.Add([]byte(`{"report":[{"lv":[{"lv_name":"a","lv_size":"1.5"}],"seg":[{"lv_uuid":"","devices":[1]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseReport(data)
		if err != nil {
			return
		}
		for _, lv := range s.LVs {
			if lv.Attr.String() != "" && len(lv.Attr.String()) != 10 {
				t.Errorf("bad attr %q", lv.Attr.String())
			}
			if !lv.Hidden && strings.HasPrefix(lv.Name, "[") && strings.HasSuffix(lv.Name, "]") {
				t.Errorf("brackets kept in %q", lv.Name)
			}
		}
	})
}

func TestParseReportGuestCapture(t *testing.T) {
	// Captured in the UML guest (lvm2 2.03.16, active device-mapper) by
	// TestGuestReportCapture: thin pool, thin LV with data, read-only thin
	// snapshot (inactive), activated thin clone, raid1, thick origin with a
	// COW snapshot. fullreport lists only visible LVs.
	data, err := os.ReadFile(filepath.Join("testdata", "fullreport-guest-all-kinds.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseReport(data)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		lv    string
		check func(lv LV) bool
	}{
		{"pool", func(lv LV) bool {
			return lv.Attr.IsThinPool() && lv.SegType() == "thin-pool" && lv.Size == 256<<20 &&
				lv.Segments[0].ChunkSize == 64<<10 && lv.DataPercent > 0 && lv.MetadataPercent > 0 && lv.MetadataSize > 0
		}},
		{"thin", func(lv LV) bool {
			return lv.Attr.IsThin() && lv.PoolLV == "pool" && lv.Size == 1<<30 && lv.DataPercent > 0 &&
				slices.Equal(lv.Tags, []string{"pvc-x"}) && lv.Attr.Active()
		}},
		{"tsnap", func(lv LV) bool {
			return lv.Attr.IsThin() && lv.Origin == "thin" && !lv.Attr.Active() && lv.Attr.SkipActive &&
				!lv.Attr.Writable()
		}},
		{"tclone", func(lv LV) bool {
			return lv.Attr.IsThin() && lv.Origin == "thin" && lv.Attr.Active() && !lv.Attr.SkipActive &&
				lv.Attr.Writable()
		}},
		{"mirror", func(lv LV) bool {
			return lv.Attr.IsRAID() && lv.SegType() == "raid1" && lv.Segments[0].Stripes == 2 &&
				slices.Equal(
					lv.Segments[0].Devices,
					[]string{"mirror_rimage_0(0)", "mirror_rimage_1(0)"},
				) && len(lv.PVNames()) == 0
		}},
		{"thick", func(lv LV) bool { return lv.Attr.VolumeType == VolumeTypeOrigin && lv.SegType() == "linear" }},
		{"cow", func(lv LV) bool {
			return lv.Attr.IsSnapshot() && lv.Origin == "thick" && lv.Size == 8<<20 &&
				lv.Segments[0].ChunkSize == 4096 &&
				slices.Equal(lv.PVNames(), []string{"/dev/ubda"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.lv, func(t *testing.T) {
			lv, ok := s.LV("gcap", tt.lv)
			if !ok {
				t.Fatal("missing")
			}
			if !tt.check(lv) {
				t.Errorf("%+v", lv)
			}
		})
	}
	vg, _ := s.VG("gcap")
	if !vg.Owned() || vg.PVCount != 2 || vg.LVCount != 7 {
		t.Errorf("vg = %+v", vg)
	}
}
