package main

import (
	"maps"
	osexec "os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/driver"
)

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	for _, tc := range []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{name: "no samples", sorted: nil, p: 50, want: 0},
		{name: "one sample is every percentile", sorted: []float64{7}, p: 99, want: 7},
		{name: "median of an odd count", sorted: []float64{1, 2, 3}, p: 50, want: 2},
		{name: "nearest rank rounds up", sorted: []float64{1, 2, 3, 4}, p: 50, want: 2},
		{name: "p90 of ten", sorted: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, p: 90, want: 9},
		{name: "p99 of ten is the max", sorted: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, p: 99, want: 10},
		{name: "p99 of a hundred", sorted: hundred, p: 99, want: 99},
		{name: "p100 is the max", sorted: hundred, p: 100, want: 100},
		{name: "tiny p is the min", sorted: hundred, p: 0.001, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
			}
		})
	}
}

// claimAt is a claim whose milestones are the given offsets (ms) from a fixed start.
func claimAt(name string, offsets map[string]int) claimTimes {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	c := claimTimes{Claim: name, Milestones: map[string]time.Time{}}
	for m, off := range offsets {
		c.Milestones[m] = start.Add(time.Duration(off) * time.Millisecond)
	}
	return c
}

func TestSummarise(t *testing.T) {
	claims := []claimTimes{
		claimAt("a", map[string]int{mPVCCreate: 0, mSelectedNode: 100, mBound: 1100, mPodRunning: 3100}),
		claimAt("b", map[string]int{mPVCCreate: 0, mSelectedNode: 200, mBound: 2200}),
		claimAt("c", map[string]int{mPVCCreate: 0, mSelectedNode: 300}), // never bound
	}
	stats := summarise(claims, map[string]float64{floorCreate: 500})
	byName := map[string]phaseStats{}
	for _, s := range stats {
		byName[s.Name] = s
	}
	for _, tc := range []struct {
		phase         string
		n             int
		p50, max, rat float64
	}{
		{phase: "PVC → selected-node (scheduler)", n: 3, p50: 200, max: 300},
		{phase: "selected-node → PVC Bound", n: 2, p50: 1000, max: 2000, rat: 2},
		{phase: "PVC → Bound (total)", n: 2, p50: 1100, max: 2200, rat: 2.2},
		{phase: "PVC → Pod Running (total)", n: 1, p50: 3100, max: 3100},
		{phase: "LogicalVolume → LV created", n: 0},
		{phase: "PVC delete → PV gone", n: 0},
	} {
		t.Run(tc.phase, func(t *testing.T) {
			s, ok := byName[tc.phase]
			if !ok {
				t.Fatalf("no phase %q in %v", tc.phase, stats)
			}
			if s.N != tc.n || s.P50 != tc.p50 || s.Max != tc.max || s.FloorRatio != tc.rat {
				t.Errorf("got n=%d p50=%v max=%v ratio=%v, want n=%d p50=%v max=%v ratio=%v",
					s.N, s.P50, s.Max, s.FloorRatio, tc.n, tc.p50, tc.max, tc.rat)
			}
		})
	}
	if len(stats) != len(phases) {
		t.Errorf("%d rows, want one per phase (%d)", len(stats), len(phases))
	}
}

func TestWriteTable(t *testing.T) {
	r := &result{StorageClass: "lvms-thin", Provisioner: driver.Name, Claims: 2, Size: "1Gi", VolumeMode: "Filesystem",
		Bound: 1, Running: 1, ProvisioningFailed: 1, FailureMessages: []string{"bench-0001: no space (×1)"}}
	r.Phases = summarise([]claimTimes{
		claimAt("a", map[string]int{mPVCCreate: 0, mBound: 1500}),
	}, map[string]float64{floorCreate: 1000})
	var b strings.Builder
	if err := writeTable(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"bound 1/2", "ProvisioningFailed events 1", "no space (×1)",
		"PVC → Bound (total)  1  1.50s  1.50s  1.50s  1.50s      1.50×     1.00",
		"LogicalVolume → LV created  0      -",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestParseSamples(t *testing.T) {
	for _, tc := range []struct {
		name           string
		out            string
		create, remove []float64
		wantErr        bool
	}{
		{name: "two samples among lvm2 warnings", out: "  WARNING: x\nsample 412000000 300500000\nsample 1000000 2000000\n",
			create: []float64{412, 1}, remove: []float64{300.5, 2}},
		{name: "no sample", out: "lvcreate failed\n", wantErr: true},
		{name: "garbled number", out: "sample 12x 3\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, r, err := parseSamples(tc.out)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && (!slices.Equal(c, tc.create) || !slices.Equal(r, tc.remove)) {
				t.Errorf("got %v %v, want %v %v", c, r, tc.create, tc.remove)
			}
		})
	}
}

func TestParseProcessMetrics(t *testing.T) {
	out := "# HELP x\nprocess_cpu_seconds_total 12.5\nprocess_resident_memory_bytes 6.5e+07\nother 1\n" +
		`lvms_host_commands_total{command="lvcreate",result="ok"} 20` + "\n" +
		`lvms_host_commands_total{command="fullreport",result="failed"} 1` + "\n" +
		`lvms_host_command_duration_seconds_sum{command="lvcreate",result="ok"} 9.5` + "\n" +
		`lvms_host_command_duration_seconds_count{command="lvcreate",result="ok"} 20` + "\n"
	m := parseProcessMetrics(out)
	want := map[string]float64{"lvcreate/ok": 20, "fullreport/failed": 1, "lvcreate/ok/seconds": 9.5}
	if m.rss != 65e6 || m.cpu != 12.5 || !maps.Equal(m.commands, want) {
		t.Errorf("got %+v, want rss 6.5e7, cpu 12.5, commands %v", m, want)
	}
}

func TestResourceUsageDescribe(t *testing.T) {
	u := resourceUsage{Pod: "lvms-node-x", Node: "node-0", RSSBefore: 50 << 20, RSSAfter: 52 << 20, CPUAfter: 1.5,
		Commands: map[string]float64{"lvcreate/ok": 10, "lvcreate/ok/seconds": 5, "blkid/failed": 2}}
	got := u.describe()
	for _, want := range []string{"RSS 50.0 → 52.0 MiB", "CPU 1.50 s", "blkid/failed 2, lvcreate/ok 10 (500ms each)"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

func TestResourceUsageDescribeRestart(t *testing.T) {
	u := resourceUsage{Pod: "lvms-operator-x", CPUBefore: 10, CPUAfter: 2}
	if got := u.describe(); !strings.Contains(got, "RESTARTED during the run") {
		t.Errorf("a CPU counter that went down is not reported as a restart: %q", got)
	}
}

func TestLvcreateScriptUsesTheAgentsCommandLine(t *testing.T) {
	for _, tc := range []struct {
		name, pool string
		want       []string
	}{
		{name: "thin", pool: "thin-pool-1", want: []string{
			"nsenter -t 1 -m -u -i -n -p -- lvm lvcreate --config 'backup { retain_min = 10 retain_days = 0 }' " +
				"-y --wipesignatures y -n bench-floor-r1-0 --type thin -V 1073741824b --thinpool thin-pool-1 " +
				"--addtag lvms-bench-r1 thin",
			"nsenter -t 1 -m -u -i -n -p -- lvm lvremove --config 'backup { retain_min = 10 retain_days = 0 }' " +
				"-y thin/bench-floor-r1-0", "lv_tags=lvms-bench-r1", "</proc/stat"}},
		{name: "thick", want: []string{
			"lvm lvcreate --config 'backup { retain_min = 10 retain_days = 0 }' -y --wipesignatures y " +
				"-n bench-floor-r1-1 -L 1073741824b --addtag lvms-bench-r1 thick"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := lvcreateScript(tc.name, tc.pool, 1<<30, "r1", 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(s, w) {
					t.Errorf("script lacks %q:\n%s", w, s)
				}
			}
			if out, err := osexec.Command("sh", "-n", "-c", s).CombinedOutput(); err != nil {
				t.Errorf("sh -n: %v\n%s\n%s", err, out, s)
			}
		})
	}
}

// The wait for a quiet node ends at once when any idle share will do, and after the bound when
// none will; it prints the line parseQuiet reads.
func TestQuietScript(t *testing.T) {
	for _, tc := range []struct {
		idle, max, wantWaited int
	}{{idle: 0, max: 5, wantWaited: 0}, {idle: 101, max: 1, wantWaited: 1}} {
		out, err := osexec.Command("sh", "-c", quietScript(tc.idle, tc.max)).CombinedOutput()
		if err != nil {
			t.Fatalf("idle %d: %v\n%s", tc.idle, err, out)
		}
		pct, waited, ok := parseQuiet(string(out))
		if !ok || waited != tc.wantWaited || pct < 0 || pct > 100 {
			t.Errorf("idle %d, max %d: %q parsed as %d %% after %d s (%v), want %d s", tc.idle, tc.max, out, pct,
				waited, ok, tc.wantWaited)
		}
	}
}

func TestFloorDescribeQuiet(t *testing.T) {
	f := &floor{
		VG:       "thin",
		Lvcreate: map[string][]float64{"node-0": {300}, "node-1": {500}},
		Lvremove: map[string][]float64{"node-0": {200}, "node-1": {400}},
		QuietIdlePct: map[string]int{
			"node-0": 91,
			"node-1": 43,
		},
		QuietWaitSeconds: map[string]int{"node-0": 3, "node-1": 120},
	}
	got := f.describe()
	for _, want := range []string{"sampled once the node's CPU was 80 % idle (waited 3–120 s)",
		"node-1 NOT quiet after 120 s (43 % idle)"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "node-0 NOT") {
		t.Errorf("a quiet node reported as not quiet: %q", got)
	}
}
