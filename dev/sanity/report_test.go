package sanity_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// summary is what one csi-sanity run reported.
type summary struct {
	// Ran is ginkgo's "Ran N of M Specs ..." line, Counts its "N Passed | N Failed | ..." line.
	Ran, Counts string
	// Skipped lists the skipped specs with ginkgo's reason, Pending the specs csi-sanity marks pending.
	Skipped, Pending []string
	// Failed lists the failed specs.
	Failed []string
}

var (
	ranRE    = regexp.MustCompile(`Ran [0-9]+ of [0-9]+ Specs? in .*`)
	countsRE = regexp.MustCompile(`[0-9]+ Passed \| [0-9]+ Failed \| [0-9]+ Pending \| [0-9]+ Skipped`)
)

// scanSummary finds ginkgo's summary lines in csi-sanity's console output.
func scanSummary(r io.Reader, s *summary) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := ranRE.FindString(line); m != "" {
			s.Ran = m
		}
		if m := countsRE.FindString(line); m != "" {
			s.Counts = m
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read csi-sanity output: %w", err)
	}
	return nil
}

// ginkgoReport is the part of ginkgo's --json-report this package reads.
type ginkgoReport struct {
	SpecReports []struct {
		ContainerHierarchyTexts []string
		LeafNodeText            string
		LeafNodeType            string
		State                   string
		Failure                 struct {
			Message string
		}
	}
}

// readSpecs adds the skipped and failed specs of ginkgo's JSON report at path to s.
func readSpecs(path string, s *summary) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read ginkgo report: %w", err)
	}
	var reports []ginkgoReport
	if err := json.Unmarshal(data, &reports); err != nil {
		return fmt.Errorf("parse ginkgo report %s: %w", path, err)
	}
	for _, r := range reports {
		for _, spec := range r.SpecReports {
			if spec.LeafNodeType != "It" {
				continue
			}
			name := strings.Join(append(spec.ContainerHierarchyTexts, spec.LeafNodeText), " ")
			msg := strings.Join(strings.Fields(spec.Failure.Message), " ")
			switch spec.State {
			case "skipped":
				s.Skipped = append(s.Skipped, name+": "+msg)
			case "pending":
				s.Pending = append(s.Pending, name)
			case "failed", "panicked", "timedout", "interrupted", "aborted":
				s.Failed = append(s.Failed, name+" ("+spec.State+"): "+msg)
			}
		}
	}
	return nil
}

// write prints the summary of run name to w.
func (s *summary) write(w io.Writer, name string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "csi-sanity %s: %s\ncsi-sanity %s: %s\n", name, s.Ran, name, s.Counts)
	for _, f := range s.Failed {
		fmt.Fprintf(&b, "  failed:  %s\n", f)
	}
	for _, p := range s.Pending {
		fmt.Fprintf(&b, "  pending: %s\n", p)
	}
	for _, sk := range s.Skipped {
		fmt.Fprintf(&b, "  skipped: %s\n", sk)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// expect fails unless the run passed at least passed specs and skipped at most skipped: a rise in
// skips means a capability or spec was lost (csi-sanity itself passes on skips), a fall of the passes
// that specs no longer run.
func (s *summary) expect(passed, skipped int) error {
	var p, f, pe, sk int
	if _, err := fmt.Sscanf(s.Counts, "%d Passed | %d Failed | %d Pending | %d Skipped", &p, &f, &pe, &sk); err != nil {
		return fmt.Errorf("read counts %q: %w", s.Counts, err)
	}
	if p < passed || sk > skipped {
		return fmt.Errorf("csi-sanity %s: want at least %d passed and at most %d skipped (docs/testing-sanity.md); "+
			"update both when a spec is meant to go", s.Counts, passed, skipped)
	}
	return nil
}
