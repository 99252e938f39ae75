package devices

import (
	"errors"
	"io"
	"io/fs"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
)

func TestEvaluate(t *testing.T) {
	policy := Policy{
		VGName: "vg1",
		PVs:    map[string]string{"/dev/orphan": "", "/dev/mine": "vg1", "/dev/theirs": "home"},
	}
	disk := func(name string) BlockDevice {
		return BlockDevice{Name: name, KName: name, Type: "disk", Size: 1 << 30}
	}
	tests := []struct {
		name   string
		c      Candidate
		policy *Policy
		want   []string
	}{
		{name: "blank disk", c: Candidate{Device: disk("/dev/sdb")}},
		{
			name: "loop device over a disk",
			c: Candidate{Device: BlockDevice{Name: "/dev/loop3", KName: "/dev/loop3", Type: "loop", Size: 1 << 30},
				Facts: Facts{LoopBackingFile: "/dev/sdb", LoopOverDevice: true}},
			want: []string{
				"is a loop device over block device /dev/sdb: use that device itself (detach the loop first)",
			},
		},
		{
			name: "loop device over a file",
			c: Candidate{Device: BlockDevice{Name: "/dev/loop7", KName: "/dev/loop7", Type: "loop", Size: 1 << 30},
				Facts: Facts{LoopBackingFile: "/dev/shm/disk.img"}},
		},
		{
			name: "orphan PV",
			c:    Candidate{Device: disk("/dev/orphan"), Facts: Facts{Signatures: []string{"LVM2_member"}}},
		},
		{name: "PV of this VG with our LVs on it", c: Candidate{Device: disk("/dev/mine"),
			Facts: Facts{Signatures: []string{"LVM2_member"}, Holders: []string{"/dev/dm-0"}}}},
		{
			name: "PV of another VG",
			c:    Candidate{Device: disk("/dev/theirs"), Facts: Facts{Signatures: []string{"LVM2_member"}}},
			want: []string{"is a PV of another volume group: home"},
		},
		{name: "unknown PV", c: Candidate{Device: disk("/dev/sdz"), Facts: Facts{Signatures: []string{"LVM2_member"}}},
			want: []string{"has an LVM2_member signature but lvm2 does not list it as a PV"}},
		{
			name: "read-only",
			c: Candidate{
				Device: BlockDevice{Name: "/dev/sr", KName: "/dev/sr", Type: "disk", Size: 1, ReadOnly: true},
			},
			want: []string{"is read-only"},
		},
		{
			name: "ext4 found by probe, not by udev",
			c:    Candidate{Device: disk("/dev/sdc"), Facts: Facts{Signatures: []string{"ext4"}}},
			want: []string{"has a filesystem signature: ext4"},
		},
		{
			name: "xfs known only to udev",
			c:    Candidate{Device: BlockDevice{Name: "/dev/sdc", Type: "disk", Size: 1, FSType: "xfs"}},
			want: []string{"has a filesystem signature: xfs"},
		},
		{
			name: "partitioned",
			c: Candidate{Device: BlockDevice{Name: "/dev/sdd", KName: "/dev/sdd", Type: "disk", Size: 1,
				Children: []BlockDevice{{Name: "/dev/sdd1", KName: "/dev/sdd1", Type: "part"}}},
				Facts: Facts{PartTable: "gpt", Partitions: []string{"/dev/sdd1", "/dev/sdd2"}}},
			want: []string{"has children: /dev/sdd1, /dev/sdd2", "has a partition table: gpt"},
		},
		{
			name: "boot partition (label from probe)",
			c: Candidate{Device: BlockDevice{Name: "/dev/sdd1", Type: "part", Size: 1},
				Facts: Facts{PartLabel: "EFI Boot"}},
			want: []string{"partition label contains 'boot'"},
		},
		{
			name: "bios partition (label from udev)",
			c:    Candidate{Device: BlockDevice{Name: "/dev/sdd2", Type: "part", Size: 1, PartLabel: "BIOS"}},
			want: []string{"partition label contains 'bios'"},
		},
		{
			name: "our own LV",
			c:    Candidate{Device: BlockDevice{Name: "/dev/mapper/vg1-lv", KName: "/dev/dm-0", Type: "lvm", Size: 1}},
			want: []string{"is an LVM logical volume (type lvm)"},
		},
		{
			// A LUKS mapping on a disk is a device like any other: its content decides.
			name: "dm-crypt mapping of a disk",
			c: Candidate{Device: BlockDevice{Name: "/dev/mapper/luks-sdf", KName: "/dev/dm-4", Type: "crypt",
				ParentType: "disk", Size: 1}},
			want: nil,
		},
		{name: "rom", c: Candidate{Device: BlockDevice{Name: "/dev/sr0", Type: "rom", Size: 1}},
			want: []string{"is a read-only memory device (type rom)"}},
		{
			name: "suspended dm",
			c:    Candidate{Device: BlockDevice{Name: "/dev/dm-3", Type: "dm", Size: 1}, Facts: Facts{Suspended: true}},
			want: []string{"is suspended"},
		},
		{
			name: "mounted whole disk",
			c: Candidate{
				Device: disk("/dev/sde"),
				Facts:  Facts{MountPoints: []string{"/data"}, Signatures: []string{"xfs"}},
			},
			want: []string{"is mounted at /data", "has a filesystem signature: xfs"},
		},
		{name: "kubelet loop", c: Candidate{Device: BlockDevice{Name: "/dev/loop3", Type: "loop", Size: 1},
			Facts: Facts{LoopBackingFile: "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/x/dev/y"}},
			want: []string{"is a loop device backing kubelet plugin storage"}},
		{
			name: "plain loop",
			c: Candidate{
				Device: BlockDevice{Name: "/dev/loop4", Type: "loop", Size: 1},
				Facts:  Facts{LoopBackingFile: "/srv/disk.img"},
			},
		},
		{
			name: "empty loop",
			c:    Candidate{Device: BlockDevice{Name: "/dev/loop5", Type: "loop"}},
			want: []string{"has size 0"},
		},
		{name: "probe failed", c: Candidate{Device: disk("/dev/sdf"), ProbeErr: errors.New("no medium")},
			want: []string{"could not be probed: no medium"}},
		{name: "not selected", c: Candidate{Device: disk("/dev/sdg")}, policy: &Policy{Selector: []string{"/dev/sdb"}},
			want: []string{"is not in the device selector"}},
		{
			name: "selected by kernel name",
			c: Candidate{
				Device: BlockDevice{Name: "/dev/mapper/mpatha", KName: "/dev/dm-7", Type: "mpath", Size: 1},
			},
			policy: &Policy{Selector: []string{"/dev/dm-7"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policy
			if tt.policy != nil {
				p = *tt.policy
			}
			v := Evaluate(tt.c, p)
			if !slices.Equal(v.Reasons, tt.want) {
				t.Errorf("reasons = %q, want %q", v.Reasons, tt.want)
			}
			if v.Usable() != (len(tt.want) == 0) {
				t.Errorf("usable = %t", v.Usable())
			}
		})
	}
}

func TestPredicatesNamed(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Predicates() {
		if p.Name == "" || seen[p.Name] || p.Reject == nil {
			t.Errorf("bad predicate %q", p.Name)
		}
		seen[p.Name] = true
	}
}

// testHost is a Host on fsys whose device paths resolve to themselves and whose exclusive open
// succeeds except for the paths in busy.
func testHost(e *exectest.Fake, fsys fstest.MapFS, busy []string) *Host {
	return NewHost(e, fsys,
		WithResolver(func(p string) (string, error) { return p, nil }),
		WithOpenExclusive(func(p string) (io.Closer, error) {
			if slices.Contains(busy, p) {
				return nil, &fs.PathError{Op: "open", Path: p, Err: syscall.EBUSY}
			}
			return io.NopCloser(nil), nil
		}))
}

// fakeSys builds a MapFS with sysfs entries for block devices.
func fakeSys(mountinfo string, files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{"proc/self/mountinfo": {Data: []byte(mountinfo)}}
	for p, content := range files {
		fsys["sys/class/block/"+p] = &fstest.MapFile{Data: []byte(content)}
	}
	return fsys
}

func TestPlan(t *testing.T) {
	lsblk := `{"blockdevices":[
		{"name":"/dev/vda","kname":"/dev/vda","type":"disk","size":8589934592,"ro":false,"rota":false,"fstype":null},
		{"name":"/dev/vdb","kname":"/dev/vdb","type":"disk","size":8589934592,"ro":false,"rota":false,"fstype":null},
		{"name":"/dev/vdc","kname":"/dev/vdc","type":"disk","size":8589934592,"ro":false,"rota":false,"fstype":null}]}`
	f := exectest.New().
		On(exectest.OK(lsblk), "lsblk", "--json", "--paths", "--bytes", "-o", lsblkColumns).
		On(exectest.Fail(2, ""), "blkid", "-p", "-o", "export", "/dev/vda").
		On(exectest.OK(`{"signatures":[]}`), "wipefs", "--no-act", "--json", "/dev/vda").
		On(exectest.OK("DEVNAME=/dev/vdb\nTYPE=xfs\nUSAGE=filesystem\n"), "blkid", "-p", "-o", "export", "/dev/vdb").
		// blkid cannot tell; wipefs sees a backup GPT header.
		On(exectest.Fail(2, ""), "blkid", "-p", "-o", "export", "/dev/vdc").
		On(
			exectest.OK(`{"signatures":[{"device":"vdc","offset":"0x1ff","type":"gpt"}]}`),
			"wipefs",
			"--no-act",
			"--json",
			"/dev/vdc",
		)
	fsys := fakeSys("36 22 252:16 / /srv rw - xfs /dev/vdb rw\n", map[string]string{
		"vda/dev": "252:0\n", "vdb/dev": "252:16\n", "vdc/dev": "252:32\n", "vdb/holders/dm-0": "",
	})
	assertPlan(t, testHost(f, fsys, nil), map[string]string{
		"/dev/vda": "",
		"/dev/vdb": "has children: /dev/dm-0; is mounted at /srv; has a filesystem signature: xfs",
		"/dev/vdc": "has a filesystem signature: gpt",
	})
}

// TestPlanDoesNotReadVolumes checks that the devices of volumes, a logical volume on a PV of the VG, the
// dm-crypt mapping of an encrypted one and a loop device the kubelet attached to a Block volume, are
// rejected for what they are without a signature probe or an exclusive open, while the disk beside
// them gets both.
func TestPlanDoesNotReadVolumes(t *testing.T) {
	lsblk := `{"blockdevices":[
		{"name":"/dev/loop0","kname":"/dev/loop0","type":"loop","size":134217728,"ro":false,"rota":false},
		{"name":"/dev/vda","kname":"/dev/vda","type":"disk","size":8589934592,"ro":false,"rota":false,
		 "fstype":"LVM2_member","children":[
		  {"name":"/dev/mapper/vg1-lv1","kname":"/dev/dm-0","type":"lvm","size":134217728,"ro":false,"rota":false},
		  {"name":"/dev/mapper/vg1-lv2","kname":"/dev/dm-1","type":"lvm","size":134217728,"ro":false,"rota":false,
		   "children":[{"name":"/dev/mapper/lvms-lv2","kname":"/dev/dm-2","type":"crypt","size":117440512,
		    "ro":false,"rota":false}]}]},
		{"name":"/dev/vdb","kname":"/dev/vdb","type":"disk","size":8589934592,"ro":false,"rota":false}]}`
	f := exectest.New().
		On(exectest.OK(lsblk), "lsblk", "--json", "--paths", "--bytes", "-o", lsblkColumns).
		On(exectest.OK("DEVNAME=/dev/vda\nTYPE=LVM2_member\nUSAGE=raid\n"), "blkid", "-p", "-o", "export", "/dev/vda").
		On(exectest.Fail(2, ""), "blkid", "-p", "-o", "export", "/dev/vdb").
		On(exectest.OK(`{"signatures":[]}`), "wipefs", "--no-act", "--json", "/dev/vdb")
	fsys := fakeSys("", map[string]string{
		"vda/dev": "252:0\n", "vdb/dev": "252:16\n", "vda/holders/dm-0": "", "dm-0/dev": "253:0\n",
		"vda/holders/dm-1": "", "dm-1/dev": "253:1\n", "dm-1/holders/dm-2": "", "dm-2/dev": "253:2\n",
		"loop0/dev":               "7:0\n",
		"loop0/loop/backing_file": "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/pvc-1/0f1e\n",
	})
	h, opened := openRecordingHost(f, fsys)
	assertPlan(t, h, map[string]string{
		"/dev/vdb":             "",
		"/dev/mapper/vg1-lv1":  "is an LVM logical volume (type lvm)",
		"/dev/mapper/vg1-lv2":  "is an LVM logical volume (type lvm); has children: /dev/dm-2",
		"/dev/mapper/lvms-lv2": "is the dm-crypt mapping of an LVM logical volume (type crypt)",
		"/dev/loop0":           "is a loop device backing kubelet plugin storage",
	})
	assertUntouched(t, f, *opened, []string{"/dev/dm-", "/dev/loop0"}, []string{"/dev/vda", "/dev/vdb"})
}

// TestPlanSkipsDevicesThatWentAway: on a node ending many Block volumes, lsblk lists loop devices the
// kubelet detaches and LVs lvm2 removes a moment later. They are rejected for that without a
// signature probe or an exclusive open (each probe cost 3 s and more on a busy node, 86 of them in a
// 200-claim run's deletion), while an attached loop device that is no volume's is still probed.
func TestPlanSkipsDevicesThatWentAway(t *testing.T) {
	lsblk := `{"blockdevices":[
		{"name":"/dev/loop0","kname":"/dev/loop0","type":"loop","size":134217728,"ro":false,"rota":false},
		{"name":"/dev/loop1","kname":"/dev/loop1","type":"loop","size":134217728,"ro":false,"rota":false},
		{"name":"/dev/dm-9","kname":"/dev/dm-9","type":"dm","size":134217728,"ro":false,"rota":false}]}`
	f := exectest.New().
		On(exectest.OK(lsblk), "lsblk", "--json", "--paths", "--bytes", "-o", lsblkColumns).
		On(exectest.Fail(2, ""), "blkid", "-p", "-o", "export", "/dev/loop1").
		On(exectest.OK(`{"signatures":[]}`), "wipefs", "--no-act", "--json", "/dev/loop1")
	fsys := fakeSys("", map[string]string{
		"loop0/dev": "7:0\n", // detached: no loop/ directory
		"loop1/dev": "7:1\n", "loop1/loop/backing_file": "/srv/disk.img\n",
	}) // dm-9: gone from sysfs
	h, opened := openRecordingHost(f, fsys)
	assertPlan(t, h, map[string]string{
		"/dev/loop0": "is a loop device with no backing file",
		"/dev/loop1": "",
		"/dev/dm-9":  "no longer exists",
	})
	assertUntouched(t, f, *opened, []string{"/dev/dm-9", "/dev/loop0"}, []string{"/dev/loop1"})
}

// openRecordingHost is a host on f and fsys that resolves paths to themselves and records the
// devices it opens exclusively.
func openRecordingHost(f *exectest.Fake, fsys fstest.MapFS) (*Host, *[]string) {
	var opened []string
	h := NewHost(f, fsys, WithResolver(func(p string) (string, error) { return p, nil }),
		WithOpenExclusive(func(p string) (io.Closer, error) {
			opened = append(opened, p)
			return io.NopCloser(nil), nil
		}))
	return h, &opened
}

// assertUntouched checks that no command f ran names one of the skipped devices (prefixes) and
// that exactly the devices in wantOpened were opened exclusively.
func assertUntouched(t *testing.T, f *exectest.Fake, opened, skipped, wantOpened []string) {
	t.Helper()
	for _, l := range f.Lines() {
		for _, dev := range skipped {
			if strings.Contains(l, dev) {
				t.Errorf("ran %q on %s, which should not be read", l, dev)
			}
		}
	}
	slices.Sort(opened)
	if !slices.Equal(opened, wantOpened) {
		t.Errorf("opened exclusively %q, want %q", opened, wantOpened)
	}
}

// assertPlan plans h for VG vg1 and checks each listed device's reasons, joined with "; ".
func assertPlan(t *testing.T, h *Host, want map[string]string) {
	t.Helper()
	verdicts, err := h.Plan(t.Context(), Policy{VGName: "vg1"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range verdicts {
		got[v.Device.Name] = strings.Join(v.Reasons, "; ")
	}
	for dev, w := range want {
		if got[dev] != w {
			t.Errorf("%s: reasons %q, want %q", dev, got[dev], w)
		}
	}
}

func TestWipe(t *testing.T) {
	sys := map[string]string{
		"sdb/dev": "8:16", "sdb/sdb1/partition": "1", "sdb1/dev": "8:17",
		"sdb1/holders/dm-0": "", "dm-0/dev": "254:0", "dm-0/dm/name": "vg-pool_tdata",
		"dm-0/holders/dm-1": "", "dm-1/dev": "254:1", "dm-1/dm/name": "vg-pool",
	}
	t.Run("refuses without opt-in", func(t *testing.T) {
		f := exectest.New()
		h := testHost(f, fakeSys("", sys), nil)
		for _, opt := range []WipeOptIn{{}, ForceWipeDevicesAndDestroyAllData(false)} {
			if err := h.Wipe(t.Context(), "/dev/sdb", opt); !errors.Is(err, ErrWipeNotConfirmed) {
				t.Errorf("err = %v", err)
			}
		}
		if len(f.Calls()) != 0 {
			t.Errorf("commands ran: %v", f.Lines())
		}
	})
	t.Run("removes holders deepest first, then partitions, then disk", func(t *testing.T) {
		f := exectest.New()
		f.Handler = func(exectest.Call) exectest.Response { return exectest.OK("") }
		h := testHost(f, fakeSys("", sys), nil)
		if err := h.Wipe(t.Context(), "/dev/sdb", ForceWipeDevicesAndDestroyAllData(true)); err != nil {
			t.Fatal(err)
		}
		if d := exectest.Diff(f, "dmsetup remove vg-pool", "dmsetup remove vg-pool_tdata",
			"wipefs --all --force /dev/sdb1", "wipefs --all --force /dev/sdb", "partx -d /dev/sdb"); d != "" {
			t.Error(d)
		}
	})
	t.Run("refuses a mounted holder", func(t *testing.T) {
		f := exectest.New()
		f.Handler = func(exectest.Call) exectest.Response { return exectest.OK("") }
		h := testHost(f, fakeSys("40 22 254:1 / /mnt rw - xfs /dev/mapper/vg-pool rw\n", sys), nil)
		err := h.Wipe(t.Context(), "/dev/sdb", ForceWipeDevicesAndDestroyAllData(true))
		if !errors.Is(err, ErrBusy) {
			t.Errorf("err = %v", err)
		}
		if len(f.Calls()) != 0 {
			t.Errorf("commands ran: %v", f.Lines())
		}
	})
	t.Run("refuses a mounted disk", func(t *testing.T) {
		f := exectest.New()
		h := testHost(
			f,
			fakeSys("40 22 8:48 / /data rw - ext4 /dev/sdd rw\n", map[string]string{"sdd/dev": "8:48"}),
			nil,
		)
		if err := h.Wipe(t.Context(), "/dev/sdd", ForceWipeDevicesAndDestroyAllData(true)); !errors.Is(err, ErrBusy) {
			t.Errorf("err = %v", err)
		}
	})
}
