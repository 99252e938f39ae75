package main

import (
	"bytes"
	"strings"
	"testing"
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
