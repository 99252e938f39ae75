package devices

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"golang.org/x/sys/unix"

	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
)

// blankDisks answers lsblk with the given disks and the signature probes with "nothing found".
func blankDisks(names ...string) *exectest.Fake {
	var devs []string
	for _, n := range names {
		devs = append(devs, `{"name":"/dev/`+n+`","kname":"/dev/`+n+`","type":"disk","size":1073741824}`)
	}
	f := exectest.New()
	f.Handler = func(c exectest.Call) exectest.Response {
		switch c.Name {
		case "lsblk":
			return exectest.OK(`{"blockdevices":[` + strings.Join(devs, ",") + `]}`)
		case "blkid":
			return exectest.Fail(2, "")
		case "wipefs":
			if slices.Contains(c.Args, "--no-act") {
				return exectest.OK(`{"signatures":[]}`)
			}
		}
		return exectest.OK("")
	}
	return f
}

// blockFD is an open descriptor of the block device major:minor as /proc/<pid>/fd shows it (stat
// follows the link).
func blockFD(major, minor uint32) *fstest.MapFile {
	return &fstest.MapFile{Mode: fs.ModeDevice, Sys: &syscall.Stat_t{Rdev: unix.Mkdev(major, minor)}}
}

func link(target string) *fstest.MapFile {
	return &fstest.MapFile{Mode: fs.ModeSymlink, Data: []byte(target)}
}

// busyHost is a host where vdd is swap, vde is held open by a process, vdf's device node is
// bind-mounted into a container, vdg is claimed exclusively, vdh is mounted in another mount
// namespace, vdj and vdk are the backing devices of loop devices (loop3 set up with the path
// /dev/vdj, loop5 with a path that leads to vdk's node elsewhere) and vdi is free.
func busyHost() fstest.MapFS {
	fsys := fakeSys("", map[string]string{
		"vdd/dev": "252:48", "vde/dev": "252:64", "vdf/dev": "252:80", "vdg/dev": "252:96",
		"vdh/dev": "252:112", "vdi/dev": "252:128", "vdj/dev": "252:144", "vdk/dev": "252:160",
		"loop3/dev": "7:3", "loop3/loop/backing_file": "/dev/vdj\n",
		"loop5/dev": "7:5", "loop5/loop/backing_file": "/srv/nodes/k\n",
		"loop7/dev": "7:7", "loop7/loop/backing_file": "/dev/shm/disk.img\n",
	})
	fsys["srv/nodes/k"] = blockFD(252, 160)
	fsys["proc/swaps"] = &fstest.MapFile{Data: []byte("Filename\tType\tSize\tUsed\tPriority\n" +
		"/dev/vdd                                partition\t1048572\t0\t-2\n")}
	fsys["proc/self/ns/mnt"] = link("mnt:[1]")
	fsys["proc/42/ns/mnt"] = link("mnt:[1]")
	fsys["proc/42/comm"] = &fstest.MapFile{Data: []byte("cat\n")}
	fsys["proc/42/fd/0"] = &fstest.MapFile{Mode: fs.ModeDevice | fs.ModeCharDevice}
	fsys["proc/42/fd/3"] = blockFD(252, 64)
	fsys["proc/43/ns/mnt"] = link("mnt:[2]")
	fsys["proc/43/mountinfo"] = &fstest.MapFile{Data: []byte(
		"900 800 0:5 /vdf /dev/xvdf rw,nosuid - devtmpfs udev rw\n" +
			"901 800 252:112 / /data rw - ext4 /dev/xvdh rw\n")}
	return fsys
}

func TestPlanSeesEveryUse(t *testing.T) {
	h := testHost(blankDisks("vdd", "vde", "vdf", "vdg", "vdh", "vdi", "vdj", "vdk"), busyHost(), []string{"/dev/vdg"})
	assertPlan(t, h, map[string]string{
		"/dev/vdd": "is an active swap area",
		"/dev/vde": "is held open by pid 42 (cat)",
		"/dev/vdf": "is mounted at /dev/xvdf (in the mount namespace of pid 43)",
		"/dev/vdg": "cannot be opened exclusively: open /dev/vdg: device or resource busy",
		"/dev/vdh": "is mounted at /data (in the mount namespace of pid 43)",
		"/dev/vdi": "",
		"/dev/vdj": "is the backing device of loop device /dev/loop3: detach it (losetup -d) or choose another disk",
		"/dev/vdk": "is the backing device of loop device /dev/loop5: detach it (losetup -d) or choose another disk",
	})
}

func TestWipeRefusesDevicesInUse(t *testing.T) {
	tests := []struct {
		name, dev string
		busy      []string
		sys       map[string]string
		resolve   map[string]string
	}{
		{name: "swap", dev: "/dev/vdd"},
		{name: "held open", dev: "/dev/vde"},
		{name: "bind-mounted device node", dev: "/dev/vdf"},
		{name: "mounted in another namespace", dev: "/dev/vdh"},
		{name: "not exclusive", dev: "/dev/vdi", busy: []string{"/dev/vdi"}},
		{name: "backing device of a loop device", dev: "/dev/vdj"},
		{name: "backing device of a loop device set up elsewhere", dev: "/dev/vdk"},
		{
			name: "device-mapper path checks the dm device",
			dev:  "/dev/mapper/x",
			sys: map[string]string{
				"dm-5/dev":          "254:5",
				"dm-5/holders/dm-6": "",
				"dm-6/dev":          "254:6",
				"dm-6/dm/name":      "y",
			},
			resolve: map[string]string{"/dev/mapper/x": "/dev/dm-5"},
		},
		{name: "not a block device", dev: "/dev/nosuch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := busyHost()
			for p, c := range tt.sys {
				fsys["sys/class/block/"+p] = &fstest.MapFile{Data: []byte(c)}
			}
			if tt.resolve != nil {
				fsys["proc/self/mountinfo"] = &fstest.MapFile{
					Data: []byte("50 1 254:6 / /srv rw - xfs /dev/mapper/y rw\n"),
				}
			}
			f := blankDisks()
			h := testHost(f, fsys, tt.busy)
			h.resolve = func(p string) (string, error) {
				if r, ok := tt.resolve[p]; ok {
					return r, nil
				}
				return p, nil
			}
			err := h.Wipe(t.Context(), tt.dev, ForceWipeDevicesAndDestroyAllData(true))
			if err == nil {
				t.Fatal("wiped a device in use")
			}
			t.Logf("refused: %v", err)
			if tt.name != "not a block device" && !errors.Is(err, ErrBusy) {
				t.Errorf("error %v is not ErrBusy", err)
			}
			for _, l := range f.Lines() {
				if strings.HasPrefix(l, "wipefs") || strings.HasPrefix(l, "partx") {
					t.Errorf("ran %q", l)
				}
			}
		})
	}
}

func TestParseSwaps(t *testing.T) {
	in := "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n" +
		"/dev/dm-1                               partition\t1048572\t\t0\t\t-2\n" +
		"/swap\\040file                            file\t\t524284\t\t0\t\t-3\n"
	if got := ParseSwaps([]byte(in)); !slices.Equal(got, []string{"/dev/dm-1", "/swap file"}) {
		t.Errorf("ParseSwaps = %q", got)
	}
}

func FuzzParseSwaps(f *testing.F) {
	f.Add([]byte("Filename Type Size Used Priority\n/dev/sdb2 partition 1 0 -2\n"))
	f.Add([]byte("\n\n/dev/x\\0"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, s := range ParseSwaps(data) {
			if s == "" {
				t.Errorf("empty swap file name from %q", data)
			}
		}
	})
}
