package devices

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseLsblkCaptured(t *testing.T) {
	// util-linux 2.38.1: booleans for ro/rota, numeric size, nulls.
	data, err := os.ReadFile(filepath.Join("testdata", "lsblk-2.38-host.json"))
	if err != nil {
		t.Fatal(err)
	}
	devs, err := ParseLsblk(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 5 {
		t.Fatalf("got %d devices", len(devs))
	}
	d := devs[0]
	if d.Name != "/dev/loop0" || d.Type != "loop" || d.Size != 1073741824 || d.ReadOnly || !d.Rotational ||
		d.FSType != "" {
		t.Errorf("loop0 = %+v", d)
	}
}

func TestParseLsblkVariants(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		want    []BlockDevice
		wantErr bool
	}{
		{
			name: "old util-linux: strings everywhere",
			json: `{"blockdevices":[{"name":"/dev/sda","kname":"/dev/sda","type":"disk","size":"1000204886016","ro":"0","rota":"1",
				"serial":"  WD-123 ","model":"WDC  ","children":[{"name":"/dev/sda1","kname":"/dev/sda1","type":"part","size":"512","ro":"1","pkname":"/dev/sda","partlabel":"EFI boot"}]}]}`,
			want: []BlockDevice{
				{
					Name:       "/dev/sda",
					KName:      "/dev/sda",
					Type:       "disk",
					Size:       1000204886016,
					Rotational: true,
					Serial:     "WD-123",
					Model:      "WDC",
					Children: []BlockDevice{{Name: "/dev/sda1", KName: "/dev/sda1", Type: "part",
						Size: 512, ReadOnly: true, PKName: "/dev/sda", ParentType: "disk", PartLabel: "EFI boot"}},
				},
			},
		},
		{
			name: "numbers for booleans, missing kname",
			json: `{"blockdevices":[{"name":"/dev/vdb","type":"disk","size":4096,"ro":1,"rota":0,"state":"running"}]}`,
			want: []BlockDevice{
				{Name: "/dev/vdb", KName: "/dev/vdb", Type: "disk", Size: 4096, ReadOnly: true, State: "running"},
			},
		},
		{name: "empty", json: `{"blockdevices":[]}`, want: []BlockDevice{}},
		{name: "bad bool", json: `{"blockdevices":[{"name":"/dev/x","ro":"maybe"}]}`, wantErr: true},
		{name: "bad size", json: `{"blockdevices":[{"name":"/dev/x","size":"1.5G"}]}`, wantErr: true},
		{name: "not json", json: `lsblk: failed`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLsblk([]byte(tt.json))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil && !equalDevices(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func equalDevices(a, b []BlockDevice) bool {
	return slices.EqualFunc(a, b, func(x, y BlockDevice) bool {
		return reflect.DeepEqual(withoutChildren(x), withoutChildren(y)) && equalDevices(x.Children, y.Children)
	})
}

func withoutChildren(d BlockDevice) BlockDevice {
	d.Children = nil
	return d
}

func TestFlatten(t *testing.T) {
	lv := BlockDevice{Name: "/dev/mapper/vg-lv", KName: "/dev/dm-0", Type: "lvm"}
	tree := []BlockDevice{
		{Name: "/dev/sda", KName: "/dev/sda", Children: []BlockDevice{lv}},
		{Name: "/dev/sdb", KName: "/dev/sdb", Children: []BlockDevice{lv}},
	}
	var names []string
	for _, d := range Flatten(tree) {
		names = append(names, d.KName)
	}
	if !slices.Equal(names, []string{"/dev/sda", "/dev/dm-0", "/dev/sdb"}) {
		t.Errorf("got %v", names)
	}
}

func TestParseBlkid(t *testing.T) {
	out := "DEVNAME=/dev/loop0\nUUID=MJ7X70\nVERSION=LVM2\\ 001\nTYPE=LVM2_member\nUSAGE=raid\ngarbage\n=x\n"
	kv := ParseBlkid([]byte(out))
	if kv["TYPE"] != "LVM2_member" || kv["VERSION"] != "LVM2 001" || len(kv) != 5 {
		t.Errorf("got %v", kv)
	}
}

func TestParseMountInfo(t *testing.T) {
	mi := `22 1 0:21 / / rw - overlay overlay rw
36 22 98:0 / /mnt/with\040space rw,relatime - ext4 /dev/ubda rw
37 22 254:0 / /var/lib/kubelet/pods/x rw - xfs /dev/mapper/vg-lv rw
38 22 254:0 / /other rw - xfs /dev/mapper/vg-lv rw
short line
`
	tab := ParseMountInfo([]byte(mi))
	if got := tab.MountPoints("98:0"); !slices.Equal(got, []string{"/mnt/with space"}) {
		t.Errorf("98:0 = %v", got)
	}
	if got := tab.MountPoints("254:0"); len(got) != 2 {
		t.Errorf("254:0 = %v", got)
	}
	if got := tab.bySource["/dev/ubda"]; !slices.Equal(got, []string{"/mnt/with space"}) {
		t.Errorf("by source = %v", got)
	}
}

func FuzzParseLsblk(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "lsblk-2.38-host.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(
		[]byte(
			`{"blockdevices":[{"name":"/dev/sda","size":"1","ro":"1","children":[{"name":"/dev/sda1","rota":true}]}]}`,
		),
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		devs, err := ParseLsblk(data)
		if err != nil {
			return
		}
		for _, d := range Flatten(devs) {
			if d.KName == "" && d.Name != "" {
				t.Errorf("kname not defaulted: %+v", d)
			}
		}
	})
}

func FuzzParseMountInfo(f *testing.F) {
	f.Add([]byte("36 22 98:0 / /mnt\\040x rw - ext4 /dev/ubda rw\n"))
	f.Add([]byte("1 2 3 4 5 - \\"))
	f.Add([]byte("900 800 0:5 /vdf /dev/xvdf rw,nosuid - devtmpfs udev rw\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab := ParseMountInfo(data)
		for node, mps := range tab.byNode {
			if node == "/" || len(mps) == 0 {
				t.Errorf("bind mount of devtmpfs root %q at %q", node, mps)
			}
		}
	})
}

func FuzzParseBlkid(f *testing.F) {
	f.Add([]byte("DEVNAME=/dev/loop0\nUUID=MJ7X70\nVERSION=LVM2\\ 001\nTYPE=LVM2_member\nUSAGE=raid\n"))
	f.Add([]byte("PTUUID=abc\nPTTYPE=gpt\n=x\n\\"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for k := range ParseBlkid(data) {
			if k == "" || strings.ContainsAny(k, "=\n") {
				t.Errorf("key %q from %q", k, data)
			}
		}
	})
}

func FuzzParseWipefs(f *testing.F) {
	f.Add([]byte(`{"signatures":[{"device":"vdc","offset":"0x1ff","type":"gpt"},{"type":"gpt"},{"type":""}]}`))
	f.Add([]byte("{\n   \"signatures\": [\n\n   ]\n}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sigs, err := ParseWipefs(bytes.NewReader(data))
		if err != nil {
			return
		}
		if slices.Contains(sigs, "") || len(slices.Compact(slices.Clone(sigs))) != len(sigs) {
			t.Errorf("signatures %q from %q", sigs, data)
		}
	})
}

func TestParseLsblkGuestCapture(t *testing.T) {
	// Captured in the UML guest (util-linux 2.38.1, no udev) by
	// TestGuestDeviceFilterAndWipe after preparing the disks: ubdb has a GPT
	// partition named "boot", ubdc ext4, ubdd and ubde are PVs, ubde holds an
	// LV, ubdh is read-only. lsblk reports no FSTYPE and no PARTLABEL at all.
	data, err := os.ReadFile(filepath.Join("testdata", "lsblk-guest-prepared.json"))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := ParseLsblk(data)
	if err != nil {
		t.Fatal(err)
	}
	all := Flatten(tree)
	if len(all) != 10 {
		t.Fatalf("got %d devices", len(all))
	}
	byName := map[string]BlockDevice{}
	for _, d := range all {
		byName[d.Name] = d
		if d.FSType != "" || d.PartLabel != "" {
			t.Errorf("%s: udev data %q %q in a udev-less guest", d.Name, d.FSType, d.PartLabel)
		}
	}
	if d := byName["/dev/ubdh"]; !d.ReadOnly || d.Size != 1<<30 {
		t.Errorf("ubdh = %+v", d)
	}
	if d := byName["/dev/ubdb1"]; d.Type != "part" || d.PKName != "/dev/ubdb" || d.Size != 64<<20 {
		t.Errorf("ubdb1 = %+v", d)
	}
	if d := byName["/dev/mapper/dfours-lv1"]; d.Type != "lvm" || d.PKName != "/dev/ubde" {
		t.Errorf("lv = %+v", d)
	}
	// What lsblk alone would allow, and what the probed facts (as measured
	// in the guest) change.
	policy := Policy{VGName: "dfnew", PVs: map[string]string{"/dev/ubdd": "dfforeign", "/dev/ubde": "dfours"}}
	if v := Evaluate(Candidate{Device: byName["/dev/ubdc"]}, policy); !v.Usable() {
		t.Errorf("lsblk-only view of the ext4 disk: %q", v.Reasons)
	}
	probed := Candidate{Device: byName["/dev/ubdc"], Facts: Facts{Signatures: []string{"ext4"}}}
	if v := Evaluate(probed, policy); !slices.Equal(v.Reasons, []string{"has a filesystem signature: ext4"}) {
		t.Errorf("probed ext4 disk: %q", v.Reasons)
	}
}
