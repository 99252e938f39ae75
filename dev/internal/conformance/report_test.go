package conformance

import (
	"bytes"
	"strings"
	"testing"
)

// report is the shape of ginkgo's JUnit report (--junit-report), cut down.
const report = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="5" disabled="0" errors="0" failures="1" time="10">
  <testsuite name="Kubernetes storage e2e for lvms" package="/x" tests="5">
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes storage e2e for lvms" status="passed" time="1"></testcase>
    <testcase name="[sig-storage] CSI Volumes External Storage [Driver: topolvm.io] [Testpattern: Dynamic PV (default fs)] provisioning should provision storage with pvc data source" classname="x" status="passed" time="3"></testcase>
    <testcase name="[sig-storage] CSI Volumes External Storage [Driver: topolvm.io] [Testpattern: Dynamic PV (block volmode)] volumeMode should fail to use a volume in a pod with mismatched mode" classname="x" status="failed" time="3">
      <failure message="timed out waiting for the condition&#xA;more" type="failed">stack</failure>
    </testcase>
    <testcase name="[sig-storage] CSI Volumes External Storage [Driver: topolvm.io] [Testpattern: Dynamic PV (default fs)] provisioning should provision storage with mount options" classname="x" status="skipped" time="0">
      <skipped message="skipped - Driver topolvm.io does not support mount options"></skipped>
    </testcase>
    <testcase name="[sig-storage] CSI Volumes External Storage [Driver: topolvm.io] [Testpattern: Dynamic PV (block volmode)] volumeMode should create sc, pod, pv, and pvc" classname="x" status="passed" time="3"></testcase>
    <testcase name="[sig-storage] CSI Volumes External Storage [Driver: topolvm.io] [Testpattern: Dynamic PV (default fs)] subPath should support existing directory" classname="x" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
  </testsuite>
</testsuites>`

func TestReadAndWrite(t *testing.T) {
	specs, err := Read("thin", strings.NewReader(report))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 4 {
		t.Fatalf("read %d specs, want 4 (the suite setup node and the spec the focus left out left out): %+v",
			len(specs), specs)
	}
	want := []Counts{
		{"thin", "provisioning", "fs", 1, 0, 1},
		{"thin", "volumeMode", "block", 1, 1, 0},
		{"thin", "TOTAL", "", 2, 1, 1},
	}
	got := Summarise(specs)
	if len(got) != len(want) {
		t.Fatalf("summary %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	var out bytes.Buffer
	err = Write(&out, specs)
	if err == nil || !strings.Contains(err.Error(), "1 specs failed") {
		t.Errorf("Write: %v, want 1 failed", err)
	}
	for _, line := range []string{
		"FAILED thin: [sig-storage]", "    timed out waiting for the condition\n",
		"SKIPPED thin:", "does not support mount options",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q:\n%s", line, out.String())
		}
	}
}

func TestNothingPassedFails(t *testing.T) {
	skipped := []Spec{{Class: "thick", Suite: "volumes", Mode: "fs", Status: Skipped}}
	if err := Write(&bytes.Buffer{}, skipped); err == nil {
		t.Error("Write of a report without a passed spec succeeded")
	}
	if err := Write(&bytes.Buffer{}, nil); err == nil {
		t.Error("Write of an empty report succeeded")
	}
}
