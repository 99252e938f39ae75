//go:build guest

package main

import (
	"bytes"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGuestDisksJSON runs `lvms disks -o json` and `lvms disks` in the UML guest (hack/test-lvm.sh) on
// real disks: one with ext4, one held open raw by a process, one whose device node is bind-mounted,
// the others blank. Every disk is listed with its verdict and reason, and nothing is changed.
func TestGuestDisksJSON(t *testing.T) {
	disks := strings.Split(os.Getenv("LVMS_GUEST_DISKS"), ",")
	if len(disks) < 4 || disks[0] == "" {
		t.Fatal("LVMS_GUEST_DISKS not set: guest tests must run inside the UML guest (hack/test-lvm.sh)")
	}
	withFS, open, bound := disks[0], disks[1], disks[2]
	run(t, "mkfs.ext4", "-q", withFS)
	t.Cleanup(func() { _ = osexec.Command("wipefs", "--all", withFS).Run() })
	holder := osexec.Command("sh", "-c", "exec 3<"+open+"; exec sleep 600")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	node := filepath.Join(t.TempDir(), "node")
	if err := os.WriteFile(node, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, "mount", "--bind", bound, node)
	t.Cleanup(func() { _ = osexec.Command("umount", node).Run() })

	out := lvms(t, "disks", "-o", "json")
	t.Logf("lvms disks -o json:\n%s", out)
	var reports []diskReport
	if err := json.Unmarshal([]byte(out), &reports); err != nil {
		t.Fatalf("output is not the JSON list: %v", err)
	}
	byName := map[string]diskReport{}
	for _, r := range reports {
		byName[r.Name] = r
		if r.Usable != (len(r.Reasons) == 0) {
			t.Errorf("%s: usable=%t with reasons %q", r.Name, r.Usable, r.Reasons)
		}
	}
	want := map[string]string{
		withFS: "has a filesystem signature: ext4",
		open:   "is held open by pid",
		bound:  "is mounted at " + node,
	}
	for _, d := range disks {
		r, ok := byName[d]
		switch {
		case !ok:
			t.Errorf("%s is not listed", d)
		case want[d] == "" && !r.Usable:
			t.Errorf("blank %s is not usable: %q", d, r.Reasons)
		case want[d] != "" && !slices.ContainsFunc(r.Reasons, func(s string) bool { return strings.Contains(s, want[d]) }):
			t.Errorf("%s: reasons %q, want one containing %q", d, r.Reasons, want[d])
		}
	}
	table := lvms(t, "disks")
	t.Logf("lvms disks:\n%s", table)
	if !strings.HasPrefix(table, "DEVICE") || !strings.Contains(table, "is held open by pid") {
		t.Errorf("table output lacks the header or a reason")
	}
}

func lvms(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	cmd := newRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetContext(t.Context())
	if err := cmd.Execute(); err != nil {
		t.Fatalf("lvms %s: %v", strings.Join(args, " "), err)
	}
	return out.String()
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := osexec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// TestGuestDisksForeignVolumeGroup: `lvms disks --volume-group VG` on real lvm2 counts VG's PVs as
// usable only when the node agent would use VG: a same-named VG without the lvms tag, or tagged for
// another node, is another's.
func TestGuestDisksForeignVolumeGroup(t *testing.T) {
	disks := strings.Split(os.Getenv("LVMS_GUEST_DISKS"), ",")
	if len(disks) < 2 || disks[0] == "" {
		t.Fatal("LVMS_GUEST_DISKS not set: guest tests must run inside the UML guest (hack/test-lvm.sh)")
	}
	t.Cleanup(func() {
		_ = osexec.Command("lvm", "vgremove", "-f", "-y", "dkplain", "dkother").Run()
		_ = osexec.Command("lvm", "pvremove", "-ff", "-y", disks[0], disks[1]).Run()
	})
	run(t, "lvm", "vgcreate", "dkplain", disks[0])
	run(t, "lvm", "vgcreate", "--addtag", "lvms", "--addtag", "lvms.node=another-node", "dkother", disks[1])
	for vg, disk := range map[string]string{"dkplain": disks[0], "dkother": disks[1]} {
		var reports []diskReport
		out := lvms(t, "disks", "-o", "json", "--volume-group", vg, "--node-name", "this-node")
		if err := json.Unmarshal([]byte(out), &reports); err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(reports, func(r diskReport) bool { return r.Name == disk })
		if i < 0 {
			t.Fatalf("%s not listed", disk)
		}
		want := "is a PV of another volume group: " + vg
		if r := reports[i]; r.Usable || !slices.Contains(r.Reasons, want) {
			t.Errorf("--volume-group %s: %s usable=%t reasons %q, want %q", vg, disk, r.Usable, r.Reasons, want)
		}
	}
	// The same VG for the node it is tagged for is that node's: its PV is usable.
	var reports []diskReport
	out := lvms(t, "disks", "-o", "json", "--volume-group", "dkother", "--node-name", "another-node")
	if err := json.Unmarshal([]byte(out), &reports); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(reports, func(r diskReport) bool { return r.Name == disks[1] }); i < 0 ||
		!reports[i].Usable {
		t.Errorf("--volume-group dkother on its own node: %+v, want its PV usable", reports)
	}
}
