package sanity_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSummary: the summary lines and spec lists come from csi-sanity's (ginkgo's) own output.
func TestSummary(t *testing.T) {
	out := "noise\nRan 55 of 103 Specs in 57.629 seconds\n" +
		"SUCCESS! -- 55 Passed | 0 Failed | 1 Pending | 47 Skipped\nPASS\n"
	report := `[{"SuiteDescription":"CSI Driver Test Suite","SpecReports":[
	 {"ContainerHierarchyTexts":["Controller Service [Controller Server]","ListVolumes"],
	  "LeafNodeText":"should return appropriate values","LeafNodeType":"It","State":"skipped",
	  "Failure":{"Message":"ListVolumes not supported"}},
	 {"ContainerHierarchyTexts":["Node Service"],"LeafNodeText":"should work","LeafNodeType":"It",
	  "State":"failed","Failure":{"Message":"Expected\n  an error"}},
	 {"ContainerHierarchyTexts":["ListVolumes"],"LeafNodeText":"pagination","LeafNodeType":"It","State":"pending"},
	 {"ContainerHierarchyTexts":["Node Service"],"LeafNodeText":"passes","LeafNodeType":"It","State":"passed"},
	 {"LeafNodeText":"","LeafNodeType":"SynchronizedBeforeSuite","State":"passed"}]}]`
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, []byte(report), 0o600); err != nil {
		t.Fatal(err)
	}
	var s summary
	if err := scanSummary(strings.NewReader(out), &s); err != nil {
		t.Fatal(err)
	}
	if err := readSpecs(path, &s); err != nil {
		t.Fatal(err)
	}
	if s.Ran != "Ran 55 of 103 Specs in 57.629 seconds" || s.Counts != "55 Passed | 0 Failed | 1 Pending | 47 Skipped" {
		t.Errorf("summary lines %q, %q", s.Ran, s.Counts)
	}
	wantSkipped := []string{
		"Controller Service [Controller Server] ListVolumes should return appropriate values: ListVolumes not supported",
	}
	wantFailed := []string{"Node Service should work (failed): Expected an error"}
	if !slices.Equal(s.Skipped, wantSkipped) || !slices.Equal(s.Failed, wantFailed) ||
		!slices.Equal(s.Pending, []string{"ListVolumes pagination"}) {
		t.Errorf(
			"skipped %q, failed %q, pending %q; want %q, %q, one",
			s.Skipped,
			s.Failed,
			s.Pending,
			wantSkipped,
			wantFailed,
		)
	}
	var b strings.Builder
	if err := s.write(&b, "thick"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "csi-sanity thick: Ran 55 of 103") {
		t.Errorf("written summary %q", b.String())
	}
}

// TestExpectCounts: a run with more skips or fewer passes than recorded fails.
func TestExpectCounts(t *testing.T) {
	s := &summary{Counts: "60 Passed | 0 Failed | 1 Pending | 42 Skipped"}
	if err := s.expect(60, 42); err != nil {
		t.Errorf("the recorded counts: %v", err)
	}
	if err := s.expect(60, 41); err == nil {
		t.Error("one skip more than recorded passed")
	}
	if err := s.expect(61, 42); err == nil {
		t.Error("one pass fewer than recorded passed")
	}
	if err := (&summary{}).expect(0, 100); err == nil {
		t.Error("no counts at all passed")
	}
}
