package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

func TestPrintDisks(t *testing.T) {
	var out bytes.Buffer
	err := printDisks(&out, []diskReport{
		{Name: "/dev/sdb", Type: "disk", SizeBytes: 2 << 30, Usable: true},
		{Name: "/dev/sdc", Type: "disk", SizeBytes: 512 << 20, Reasons: []string{"is an active swap area", "x"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "DEVICE") ||
		!strings.Contains(lines[1], "2Gi") || !strings.Contains(lines[1], "yes") ||
		!strings.HasSuffix(lines[2], "no      is an active swap area; x") {
		t.Errorf("table:\n%s", out.String())
	}
}

func TestDisksRefusesUnknownOutput(t *testing.T) {
	cmd := newRootCommand()
	cmd.SetArgs([]string{"disks", "-o", "yaml"})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "want table or json") {
		t.Errorf("err = %v", err)
	}
}

// TestNotOurVG: `lvms disks --volume-group` counts a volume group's PVs as usable only when the node
// agent would use the volume group: tagged lvms and not tagged for another node or cluster.
func TestNotOurVG(t *testing.T) {
	state := &lvm.State{VGs: []lvm.VG{
		{Name: "plain"},
		{Name: "ours", Tags: []string{lvm.Tag, "lvms.node=node-a", "lvms.cluster=c1"}},
		{Name: "adoptable", Tags: []string{lvm.Tag}},
		{Name: "other-node", Tags: []string{lvm.Tag, "lvms.node=node-b", "lvms.cluster=c1"}},
		{Name: "other-cluster", Tags: []string{lvm.Tag, "lvms.node=node-a", "lvms.cluster=c2"}},
	}}
	id := lvm.Identity{Node: "node-a", Cluster: "c1"}
	for name, foreign := range map[string]bool{
		"": false, "absent": false, "ours": false, "adoptable": false,
		"plain": true, "other-node": true, "other-cluster": true,
	} {
		if why := notOurVG(state, name, id); (why != "") != foreign {
			t.Errorf("%q: %q, want foreign=%t", name, why, foreign)
		}
	}
}
