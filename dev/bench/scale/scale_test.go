package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCountAudit(t *testing.T) {
	log := strings.Join([]string{
		`{"stage":"ResponseComplete","verb":"patch","user":{"username":"lvms-node-sim"},` +
			`"objectRef":{"resource":"lvmvolumegroups"},"responseStatus":{"code":409}}`,
		`{"stage":"ResponseComplete","verb":"patch","user":{"username":"lvms-node-sim"},` +
			`"objectRef":{"resource":"lvmvolumegroups"},"responseStatus":{"code":200}}`,
		`{"stage":"ResponseComplete","verb":"update","user":{"username":"lvms-operator"},` +
			`"objectRef":{"resource":"lvmclusters","subresource":"status"},"responseStatus":{"code":200}}`,
		`{"stage":"ResponseComplete","verb":"get","user":{"username":"someone-else"},"responseStatus":{"code":200}}`,
		`{"stage":"ResponseStarted","verb":"watch","user":{"username":"lvms-operator"}}`,
		`{"stage":"ResponseComplete","verb":"list","user":{"username":"csi-provisioner"}, "objectRef":`, // partial
	}, "\n")
	counts, consumed, err := countAudit(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []requestCount{
		{User: "lvms-node-sim", Verb: "patch", Resource: "lvmvolumegroups", Count: 2, Errors: 1},
		{User: "lvms-operator", Verb: "update", Resource: "lvmclusters/status", Count: 1},
	}
	if !slices.Equal(counts, want) {
		t.Errorf("counts %+v, want %+v", counts, want)
	}
	if wantBytes := int64(strings.LastIndexByte(log, '\n') + 1); consumed != wantBytes {
		t.Errorf("consumed %d bytes, want %d (the partial last line stays)", consumed, wantBytes)
	}
}

func TestAuditReaderTakesOnlyNewLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	line := `{"stage":"ResponseComplete","verb":"get","user":{"username":"lvms-operator"},"objectRef":{"resource":"nodes"}}` + "\n"
	if err := os.WriteFile(path, []byte(line+line), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &auditReader{path: path}
	if c, _, err := a.take(); err != nil || len(c) != 1 || c[0].Count != 2 {
		t.Fatalf("first take %+v, %v", c, err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(line)
	_ = f.Close()
	time.Sleep(10 * time.Millisecond)
	c, elapsed, err := a.take()
	if err != nil || len(c) != 1 || c[0].Count != 1 || elapsed <= 0 || c[0].PerSec <= 0 {
		t.Fatalf("second take %+v over %s, %v", c, elapsed, err)
	}
}

func TestProvisionerArgs(t *testing.T) {
	manifest := filepath.Join(t.TempDir(), "manager.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Namespace
metadata: {name: x}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: lvms-operator}
spec:
  template:
    spec:
      containers:
      - name: manager
        args: [--leader-elect]
      - name: csi-provisioner
        args: [--csi-address=/run/topolvm/csi-topolvm.sock, --enable-capacity, --capacity-ownerref-level=2,
               --leader-election, --leader-election-namespace=$(NAMESPACE), --worker-threads=50]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := provisionerArgs(manifest, "/tmp/x.sock", "lvms-system")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--csi-address=/tmp/x.sock",
		"--enable-capacity",
		"--capacity-ownerref-level=-1",
		"--worker-threads=50",
	}
	if !slices.Equal(got, want) {
		t.Errorf("args %q, want %q", got, want)
	}
	// The repository's own manifest has the container.
	if _, err := provisionerArgs("../../../config/manager/manager.yaml", "/s", "ns"); err != nil {
		t.Error(err)
	}
}

func TestReadProcAndWindow(t *testing.T) {
	s, err := readProc(os.Getpid())
	if err != nil || s.RSS == 0 {
		t.Fatalf("readProc: %+v, %v", s, err)
	}
	sm := &sampler{all: []sample{
		{At: time.Unix(10, 0), RSS: 5, CPU: 1},
		{At: time.Unix(11, 0), RSS: 9, CPU: 1.5},
		{At: time.Unix(13, 0), RSS: 7, CPU: 3},
		{At: time.Unix(20, 0), RSS: 50, CPU: 9},
	}}
	u := sm.window(time.Unix(10, 0), time.Unix(13, 0))
	if u.PeakRSS != 9 || u.EndRSS != 7 || u.CPU != 2 || u.Cores != 2.0/3 {
		t.Errorf("window %+v", u)
	}
}

func TestTableAndPlot(t *testing.T) {
	steps := []stepResult{{Nodes: 10, Claims: 5, ClaimsSeconds: 2}, {Nodes: 100, Claims: 5, ClaimsSeconds: 3,
		Steady: phase{Seconds: 60, Requests: []requestCount{{User: "lvms-operator", Verb: "get", Resource: "nodes",
			Count: 60, PerSec: 1}}}}}
	dir := t.TempDir()
	if err := writeResults(dir, info{Commit: "abc"}, steps); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "| lvms-operator | get | nodes | 0 | 0 | 1.00 | 36.00 | 0 |") {
		t.Errorf("table.md:\n%s", raw)
	}
	if _, err := os.Stat(filepath.Join(dir, "scale.svg")); err != nil {
		t.Error(err)
	}
}
