package lvm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
)

var (
	ours    = VG{Name: "vg1", Tags: []string{"x", Tag}}
	foreign = VG{Name: "home", Tags: []string{"x"}}
)

func TestCommands(t *testing.T) {
	tests := []struct {
		name string
		op   func(ctx context.Context, c *Client) error
		want string
	}{
		{"pvcreate", func(ctx context.Context, c *Client) error { return c.CreatePVs(ctx, "/dev/sdb", "/dev/sdc") },
			"lvm pvcreate /dev/sdb /dev/sdc"},
		{"pvremove", func(ctx context.Context, c *Client) error { return c.RemovePV(ctx, PV{Name: "/dev/sdb"}) },
			"lvm pvremove -y /dev/sdb"},
		{"vgcreate", func(ctx context.Context, c *Client) error {
			return c.CreateVG(ctx, "vg1", []string{"/dev/sdb"}, "lvms", "extra")
		}, "lvm vgcreate --addtag lvms --addtag extra vg1 /dev/sdb"},
		{"vgextend", func(ctx context.Context, c *Client) error { return c.ExtendVG(ctx, ours, "/dev/sdc") },
			"lvm vgextend vg1 /dev/sdc"},
		{"vgreduce", func(ctx context.Context, c *Client) error { return c.ReduceVG(ctx, ours, "/dev/sdc") },
			"lvm vgreduce -y vg1 /dev/sdc"},
		{"vgremove", func(ctx context.Context, c *Client) error { return c.RemoveVG(ctx, ours) }, "lvm vgremove vg1"},
		{"vgchange", func(ctx context.Context, c *Client) error { return c.ActivateVG(ctx, ours, false) },
			"lvm vgchange -an vg1"},
		{"linear", func(ctx context.Context, c *Client) error {
			return c.CreateLV(ctx, ours, LVOptions{Name: "lv", Size: 1000, Tags: []string{"t"}})
		}, "lvm lvcreate -y --wipesignatures y -n lv -L 1024b --addtag t vg1"},
		{"striped", func(ctx context.Context, c *Client) error {
			return c.CreateLV(ctx, ours, LVOptions{Name: "lv", Size: 1 << 30, Stripes: 2, StripeSize: "64k"})
		}, "lvm lvcreate -y --wipesignatures y -n lv -L 1073741824b -i 2 -I 64k vg1"},
		{"raid1", func(ctx context.Context, c *Client) error {
			return c.CreateLV(ctx, ours, LVOptions{Name: "lv", Size: 1 << 20, RAID: RAID1, Mirrors: 2})
		}, "lvm lvcreate -y --wipesignatures y -n lv -L 1048576b --type raid1 -m 2 vg1"},
		{"raid10", func(ctx context.Context, c *Client) error {
			return c.CreateLV(ctx, ours, LVOptions{Name: "lv", Size: 1 << 20, RAID: RAID10, Mirrors: 1, Stripes: 2})
		}, "lvm lvcreate -y --wipesignatures y -n lv -L 1048576b --type raid10 -m 1 -i 2 vg1"},
		{"raid5", func(ctx context.Context, c *Client) error {
			return c.CreateLV(
				ctx,
				ours,
				LVOptions{Name: "lv", Size: 1 << 20, RAID: RAID5, Stripes: 3, StripeSize: "128k"},
			)
		}, "lvm lvcreate -y --wipesignatures y -n lv -L 1048576b --type raid5 -i 3 -I 128k vg1"},
		{"thin pool", func(ctx context.Context, c *Client) error {
			return c.CreateThinPool(ctx, ours, ThinPoolOptions{Name: "pool", Extents: PercentOf(90, "FREE"),
				ChunkSize: 128 << 10, MetadataSize: 16 << 20})
		}, "lvm lvcreate -y --type thin-pool -n pool -l 90%FREE -c 131072b --poolmetadatasize 16777216b -Z n vg1"},
		{"thin pool sized", func(ctx context.Context, c *Client) error {
			return c.CreateThinPool(ctx, ours, ThinPoolOptions{Name: "pool", Size: 1 << 30, Zero: true})
		}, "lvm lvcreate -y --type thin-pool -n pool -L 1073741824b -Z y vg1"},
		{"thin", func(ctx context.Context, c *Client) error {
			return c.CreateThinLV(ctx, ours, ThinLVOptions{Name: "pvc-1", Pool: "pool", VirtualSize: 5 << 30})
		}, "lvm lvcreate -y --wipesignatures y -n pvc-1 --type thin -V 5368709120b --thinpool pool vg1"},
		{"thin snapshot", func(ctx context.Context, c *Client) error {
			return c.CreateSnapshot(ctx, ours, SnapshotOptions{Name: "s", Origin: "pvc-1", ReadOnly: true})
		}, "lvm lvcreate -y -s -n s -p r vg1/pvc-1"},
		{"thin snapshot active", func(ctx context.Context, c *Client) error {
			return c.CreateSnapshot(ctx, ours, SnapshotOptions{Name: "s", Origin: "pvc-1", Activate: true})
		}, "lvm lvcreate -y -s -n s --setactivationskip n vg1/pvc-1"},
		{"thick snapshot", func(ctx context.Context, c *Client) error {
			return c.CreateSnapshot(ctx, ours, SnapshotOptions{Name: "s", Origin: "lv", Size: 1 << 20, Activate: true})
		}, "lvm lvcreate -y -s -n s -L 1048576b vg1/lv"},
		{"lvextend", func(ctx context.Context, c *Client) error {
			return c.ExtendLV(ctx, ours, "lv", ExtendOptions{Size: 2 << 30})
		}, "lvm lvextend -y -L 2147483648b vg1/lv"},
		{"pool extend", func(ctx context.Context, c *Client) error {
			return c.ExtendLV(
				ctx,
				ours,
				"pool",
				ExtendOptions{Extents: PercentOf(90, "VG"), PoolMetadataSize: 32 << 20},
			)
		}, "lvm lvextend -y -l 90%VG --poolmetadatasize 33554432b vg1/pool"},
		{"lvremove", func(ctx context.Context, c *Client) error { return c.RemoveLV(ctx, ours, "lv") },
			"lvm lvremove -y vg1/lv"},
		{"lvchange", func(ctx context.Context, c *Client) error {
			return c.ActivateLV(ctx, ours, "s", ActivateOptions{Active: true, IgnoreSkip: true})
		}, "lvm lvchange -ay -K vg1/s"},
		{"tag", func(ctx context.Context, c *Client) error { return c.AddLVTags(ctx, ours, "lv", "a", "b") },
			"lvm lvchange --addtag a --addtag b vg1/lv"},
		{"lvrename", func(ctx context.Context, c *Client) error { return c.RenameLV(ctx, ours, "a-restoring", "a") },
			"lvm lvrename vg1 a-restoring a"},
		{"vgmknodes", func(ctx context.Context, c *Client) error { return c.MakeNodes(ctx, ours, "lv") },
			"lvm vgmknodes vg1/lv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := exectest.New()
			f.Handler = func(exectest.Call) exectest.Response { return exectest.OK("") }
			if err := tt.op(t.Context(), New(f)); err != nil {
				t.Fatal(err)
			}
			if d := exectest.Diff(f, bounded(tt.want)); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	tests := []struct {
		name    string
		op      func(ctx context.Context, c *Client) error
		wantErr error
	}{
		{"lvcreate in foreign VG", func(ctx context.Context, c *Client) error {
			return c.CreateLV(ctx, foreign, LVOptions{Name: "lv", Size: 1})
		}, ErrNotOurs},
		{"thin pool in foreign VG", func(ctx context.Context, c *Client) error {
			return c.CreateThinPool(ctx, foreign, ThinPoolOptions{Name: "p", Size: 1})
		}, ErrNotOurs},
		{
			"lvremove in foreign VG",
			func(ctx context.Context, c *Client) error { return c.RemoveLV(ctx, foreign, "root") },
			ErrNotOurs,
		},
		{"lvextend in foreign VG", func(ctx context.Context, c *Client) error {
			return c.ExtendLV(ctx, foreign, "root", ExtendOptions{Size: 1})
		}, ErrNotOurs},
		{
			"vgextend foreign",
			func(ctx context.Context, c *Client) error { return c.ExtendVG(ctx, foreign, "/dev/sdb") },
			ErrNotOurs,
		},
		{
			"vgremove foreign",
			func(ctx context.Context, c *Client) error { return c.RemoveVG(ctx, foreign) },
			ErrNotOurs,
		},
		{
			"vgchange foreign",
			func(ctx context.Context, c *Client) error { return c.ActivateVG(ctx, foreign, false) },
			ErrNotOurs,
		},
		{"lvchange foreign", func(ctx context.Context, c *Client) error {
			return c.ActivateLV(ctx, foreign, "x", ActivateOptions{})
		}, ErrNotOurs},
		{"lvrename foreign", func(ctx context.Context, c *Client) error {
			return c.RenameLV(ctx, foreign, "root", "x")
		}, ErrNotOurs},
		{"lvrename to an option", func(ctx context.Context, c *Client) error {
			return c.RenameLV(ctx, ours, "lv", "-ff")
		}, ErrInvalidArgument},
		{"vgmknodes foreign", func(ctx context.Context, c *Client) error { return c.MakeNodes(ctx, foreign, "root") },
			ErrNotOurs},
		{"unnamed VG", func(ctx context.Context, c *Client) error { return c.RemoveVG(ctx, VG{}) }, ErrInvalidArgument},
		{"pvremove in VG", func(ctx context.Context, c *Client) error {
			return c.RemovePV(ctx, PV{Name: "/dev/sdb", VGName: "home"})
		}, ErrNotOurs},
		{
			"option-like LV name",
			func(ctx context.Context, c *Client) error { return c.RemoveLV(ctx, ours, "-ff") },
			ErrInvalidArgument,
		},
		{
			"relative device",
			func(ctx context.Context, c *Client) error { return c.CreatePVs(ctx, "sdb") },
			ErrInvalidArgument,
		},
		{"bad extents", func(ctx context.Context, c *Client) error {
			return c.CreateThinPool(ctx, ours, ThinPoolOptions{Name: "p", Extents: "90%; rm"})
		}, ErrInvalidArgument},
		{"mirrors without raid", func(ctx context.Context, c *Client) error {
			return c.CreateLV(ctx, ours, LVOptions{Name: "lv", Size: 1, Mirrors: 1})
		}, ErrInvalidArgument},
		{"bad tag", func(ctx context.Context, c *Client) error {
			return c.CreateLV(ctx, ours, LVOptions{Name: "lv", Size: 1, Tags: []string{"a b"}})
		}, ErrInvalidArgument},
		{
			"empty extend",
			func(ctx context.Context, c *Client) error { return c.ExtendLV(ctx, ours, "lv", ExtendOptions{}) },
			ErrInvalidArgument,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := exectest.New() // no responses: any execution fails the test below
			err := tt.op(t.Context(), New(f))
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if n := len(f.Calls()); n != 0 {
				t.Errorf("%d commands ran: %v", n, f.Lines())
			}
		})
	}
}

func TestErrorClassification(t *testing.T) {
	tests := []struct {
		stderr string
		code   int
		want   error
	}{
		{`  Failed to find logical volume "vgt/nope"`, 5, ErrNotFound},
		{"  Volume group \"nope\" not found\n  Cannot process volume group nope", 5, ErrNotFound},
		{"  Logical volume nope not found in volume group vgt.", 5, ErrNotFound},
		{"  No device found for /dev/loop9.", 5, ErrNotFound},
		{`  Volume group "vgt" has insufficient free space (459 extents): 2560 required.`, 5, ErrInsufficientSpace},
		{
			"  Insufficient suitable allocatable extents for logical volume lv: 100 more required",
			5,
			ErrInsufficientSpace,
		},
		{"  Number of stripes (3) must not exceed number of physical volumes (2)", 5, ErrInsufficientSpace},
		// lvconvert --repair of a raid1 LV without room outside its other image (lvm2 2.03.16, guest).
		{"  Insufficient free space: 151 extents needed, but only 130 available\n" +
			"  Failed to replace faulty devices in graid/r2.", 5, ErrInsufficientSpace},
		// lvcreate, lvextend in a VG with a missing PV (guest).
		{"  Cannot change VG graid while PVs are missing.\n" +
			"  See vgreduce --removemissing and vgextend --restoremissing.\n" +
			"  Cannot process volume group graid", 5, ErrMissingPVs},
		{`  Logical Volume "lin" already exists in volume group "vgt"`, 5, ErrAlreadyExists},
		{"  A volume group called vgt already exists.", 5, ErrAlreadyExists},
		{"  New size (13 extents) matches existing size (13 extents).", 5, ErrSizeUnchanged},
		{`  Read ahead is already auto for "lv"`, 5, ErrUnchanged},
		{"  Command on LV vg/lv uses options that are invalid with LV properties: lv_is_thick_origin .\n" +
			"  Command not permitted on LV vg/lv.", 5, ErrInUse},
		{"  Logical volume vg1/lv in use.", 5, ErrInUse},
		{"  Logical volume vg1/lv contains a filesystem in use.", 5, ErrInUse},
		{"  Size is not a multiple of 512.\n  Invalid argument for --size: 1000b", 3, ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.stderr, func(t *testing.T) {
			raw := &exec.Error{Cmd: "lvm", ExitCode: tt.code, Stderr: tt.stderr}
			err := classify(raw)
			if !errors.Is(err, tt.want) {
				t.Errorf("classify = %v, want %v", err, tt.want)
			}
			var e *exec.Error
			if !errors.As(err, &e) || e != raw {
				t.Error("classified error lost the *exec.Error")
			}
			// The helpers also work on unclassified errors.
			if errors.Is(tt.want, ErrNotFound) && !IsNotFound(raw) {
				t.Error("IsNotFound(raw) = false")
			}
			if errors.Is(tt.want, ErrInsufficientSpace) && !IsInsufficientSpace(raw) {
				t.Error("IsInsufficientSpace(raw) = false")
			}
		})
	}
	if IsNotFound(errors.New("other")) || IsNotFound(nil) {
		t.Error("IsNotFound on a non-lvm error")
	}
}

func TestExtendSameSizeSucceeds(t *testing.T) {
	f := exectest.New().On(exectest.Fail(5, "  New size (13 extents) matches existing size (13 extents)."),
		"lvm", CommandArgs("lvextend", "-y", "-L", "1048576b", "vg1/lv")...)
	if err := New(f).ExtendLV(t.Context(), ours, "lv", ExtendOptions{Size: 1 << 20}); err != nil {
		t.Errorf("err = %v", err)
	}
}

func TestStateOneExec(t *testing.T) {
	f := exectest.New().On(
		exectest.OK(`{"report":[{"vg":[{"vg_name":"vg1","vg_tags":"lvms"}]}]}`),
		"lvm",
		ReportArgs("vg1")...).
		On(
			exectest.Fail(5, `  Volume group "vg2" not found`),
			"lvm",
			ReportArgs("vg2")...).
		On(
			exectest.OK(`{"report":[{"vg":[{"vg_name":"home","vg_tags":""}]}]}`),
			"lvm",
			ReportArgs("home")...)
	c := New(f)
	vg, err := c.OwnedVG(t.Context(), "vg1")
	if err != nil || vg.Name != "vg1" {
		t.Errorf("OwnedVG = %+v, %v", vg, err)
	}
	if _, err := c.OwnedVG(t.Context(), "vg2"); !IsNotFound(err) {
		t.Errorf("missing VG: %v", err)
	}
	if _, err := c.OwnedVG(t.Context(), "home"); !IsNotOurs(err) {
		t.Errorf("foreign VG: %v", err)
	}
	if f.Count("lvm") != 3 {
		t.Errorf("lvm execs = %d, want 3", f.Count("lvm"))
	}
	if !strings.Contains(f.Lines()[0], "lvm fullreport --reportformat json --units b --nosuffix") {
		t.Errorf("state read = %s", f.Lines()[0])
	}
}

func TestValidTag(t *testing.T) {
	tests := []struct {
		tag string
		ok  bool
	}{
		{"lvms", true},
		{"lvms.node=node-0", true},
		{"a_+.-/=!:&#Z9", true},
		{strings.Repeat("t", maxTagLen), true},
		{strings.Repeat("t", maxTagLen+1), false},
		{"", false},
		{"has space", false},
		{"semi;colon", false},
		{"new\nline", false},
	}
	for _, tt := range tests {
		err := ValidTag(tt.tag)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidArgument)) {
			t.Errorf("ValidTag(%.20q…, %d bytes) = %v, want ok=%v", tt.tag, len(tt.tag), err, tt.ok)
		}
	}
}
