package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// peerRun is a run of class lvms-thin by driver drv whose floor is floorMs and whose phases are
// given as name → {n, p50, p99} (ms); the p50/floor of the phases summarise compares with the
// floor comes from floorMs.
func peerRun(drv, version string, floorMs float64, phases map[string][3]float64) *result {
	r := &result{StorageClass: "lvms-thin", Provisioner: "topolvm.io", Driver: drv, DriverVersion: version,
		Claims: 4, Nodes: []string{"node-0", "node-1"}, Concurrency: 4, Size: "1Gi", VolumeMode: "Filesystem",
		Bound: 4, Running: 4, Floor: &floor{VG: "thin", Pool: "thin-pool-1",
			Lvcreate: map[string][]float64{"node-0": {floorMs}}, Lvremove: map[string][]float64{"node-0": {floorMs}}}}
	for _, ph := range phases1to3() {
		s := phaseStats{Name: ph.Name, From: ph.From, To: ph.To}
		if v, ok := phases[ph.Name]; ok {
			s.N, s.P50, s.P99 = int(v[0]), v[1], v[2]
			if ph.Floor != "" {
				s.FloorRatio = s.P50 / floorMs
			}
		}
		r.Phases = append(r.Phases, s)
	}
	return r
}

// phases1to3 are the first three rows of the report: the scheduler, the LogicalVolume's creation
// and the lvcreate.
func phases1to3() []phase { return phases[:3] }

// row returns the fields of the comparison's line for phase name.
func row(t *testing.T, out, name string) []string {
	t.Helper()
	for line := range strings.Lines(out) {
		if strings.Contains(line, name) {
			return strings.Fields(strings.Replace(line, name, "PHASE", 1))
		}
	}
	t.Fatalf("no row %q in\n%s", name, out)
	return nil
}

func TestWriteComparison(t *testing.T) {
	lvms := peerRun("lvms", "v0.1.0-3-gabc", 500, map[string][3]float64{
		"PVC → selected-node (scheduler)": {4, 30, 40},
		"selected-node → LogicalVolume":   {4, 60, 90},
		"LogicalVolume → LV created":      {4, 600, 900},
	})
	topolvm := peerRun("topolvm", "v0.41.0", 400, map[string][3]float64{
		"PVC → selected-node (scheduler)": {4, 30, 40},
		"LogicalVolume → LV created":      {4, 1200, 1500},
	})
	var out bytes.Buffer
	if err := writeComparison(&out, []*result{lvms, topolvm}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"== lvms-thin: 4 claims of 1Gi (Filesystem) on 2 nodes, concurrency 4",
		"lvms v0.1.0-3-gabc: class lvms-thin, bound 4/4",
		"topolvm v0.41.0: class lvms-thin, bound 4/4",
		"floor: lvcreate 500ms (thin in pool thin-pool-1",
		"floor: lvcreate 400ms (thin in pool thin-pool-1",
		"p50 topolvm/lvms",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the comparison lacks %q:\n%s", want, text)
		}
	}
	for _, tc := range []struct {
		phase string
		want  []string
	}{
		// #, phase, lvms n p50 p99 ratio, topolvm n p50 p99 ratio, topolvm/lvms.
		{"PVC → selected-node (scheduler)", []string{"1", "PHASE", "4", "30ms", "40ms", "-", "4", "30ms", "40ms", "-", "1.00"}},
		// A phase one driver did not measure: "-" in its columns and in the ratio.
		{"selected-node → LogicalVolume", []string{"2", "PHASE", "4", "60ms", "90ms", "-", "-", "-", "-", "-", "-"}},
		// Each run's p50 over its own floor: 600/500 and 1200/400.
		{"LogicalVolume → LV created", []string{"3", "PHASE", "4", "600ms", "900ms", "1.20×", "4", "1.20s", "1.50s",
			"3.00×", "2.00"}},
	} {
		t.Run(tc.phase, func(t *testing.T) {
			if got := row(t, text, tc.phase); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("row %q = %q, want %q", tc.phase, got, tc.want)
			}
		})
	}
	if strings.Contains(text, "warning:") {
		t.Errorf("runs of the same shape warned:\n%s", text)
	}
}

func TestWriteComparisonWarnsOnDifferentShapes(t *testing.T) {
	a := peerRun("lvms", "v1", 500, nil)
	b := peerRun("topolvm", "v0.41.0", 500, nil)
	b.Claims, b.Size = 8, "512Mi"
	b.Floor = nil
	var out bytes.Buffer
	if err := writeComparison(&out, []*result{a, b}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"warning: topolvm ran 8 claims, lvms 4",
		"warning: topolvm ran 512Mi size, lvms 1Gi",
		"floor: not measured",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the comparison lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunLabels(t *testing.T) {
	runs := []*result{{Driver: "lvms"}, {Driver: "lvms"}, {Provisioner: "other.csi"}}
	got := strings.Join(runLabels(runs), " ")
	if want := "lvms#1 lvms#2 other.csi"; got != want {
		t.Errorf("runLabels = %q, want %q", got, want)
	}
}

func TestCompareMain(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, r := range []*result{peerRun("lvms", "v1", 500, nil), peerRun("topolvm", "v0.41.0", 400, nil)} {
		sub := filepath.Join(dir, r.Driver)
		if err := writeResults(sub, r); err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.Join(sub, "result.json"))
	}
	var stdout, stderr bytes.Buffer
	if code := compareMain(files, &stdout, &stderr); code != 0 {
		t.Fatalf("compare exited %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "topolvm v0.41.0: class lvms-thin") {
		t.Errorf("compare printed:\n%s", stdout.String())
	}
	for _, args := range [][]string{nil, {files[0]}, {"--x", files[0]}} {
		if code := compareMain(args, &stdout, &stderr); code != 2 {
			t.Errorf("compare %q exited %d, want 2 (usage)", args, code)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := compareMain([]string{files[0], filepath.Join(dir, "bad.json")}, &stdout, &stderr); code != 1 {
		t.Errorf("compare of a broken result.json exited %d, want 1", code)
	}
}
