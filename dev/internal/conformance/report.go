// Package conformance summarises the JUnit reports of Kubernetes' storage e2e suite
// (hack/conformance.sh): passed, failed and skipped specs per suite, device class and volume mode,
// and the reason of every skip.
package conformance

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
)

// Status of one spec in a report.
const (
	Passed  = "passed"
	Failed  = "failed"
	Skipped = "skipped"
)

// Spec is one spec of a report.
type Spec struct {
	Class, Suite, Mode, Name, Status string
	// Message is why it was skipped or how it failed (the first line).
	Message string
}

type junitSuites struct {
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Cases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name    string        `xml:"name,attr"`
	Status  string        `xml:"status,attr"`
	Skipped *junitMessage `xml:"skipped"`
	Failure *junitMessage `xml:"failure"`
	Error   *junitMessage `xml:"error"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
}

// patternRE finds a spec's test pattern and suite: "... [Testpattern: Dynamic PV (block volmode)]
// volumeMode should ...".
var patternRE = regexp.MustCompile(`\[Testpattern: ([^\]]*)\] ([A-Za-z0-9_-]+)`)

// Read parses the ginkgo JUnit report of one class. Specs that are not the storage suite's
// (ginkgo's suite setup and teardown nodes) and specs the focus left out are left out.
func Read(class string, r io.Reader) ([]Spec, error) {
	var doc junitSuites
	if err := xml.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("JUnit report of %s: %w", class, err)
	}
	var out []Spec
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			m := patternRE.FindStringSubmatch(c.Name)
			// Specs the focus or skip left out carry the bare message "skipped"; a spec that skipped
			// itself says why ("skipped - Driver ... does not support ...").
			if m == nil || c.Skipped != nil && strings.TrimSpace(c.Skipped.Message) == "skipped" {
				continue
			}
			spec := Spec{Class: class, Suite: m[2], Mode: "fs", Name: c.Name, Status: status(c)}
			if strings.Contains(m[1], "block volmode") {
				spec.Mode = "block"
			}
			for _, msg := range []*junitMessage{c.Skipped, c.Failure, c.Error} {
				if msg != nil && spec.Message == "" {
					spec.Message, _, _ = strings.Cut(strings.TrimSpace(msg.Message), "\n")
				}
			}
			out = append(out, spec)
		}
	}
	return out, nil
}

// status maps ginkgo's statuses: pending specs count as skipped, panics and interrupts as failed.
func status(c junitCase) string {
	switch c.Status {
	case Passed:
		return Passed
	case Skipped, "pending":
		return Skipped
	}
	if c.Status == "" && c.Failure == nil && c.Error == nil {
		if c.Skipped != nil {
			return Skipped
		}
		return Passed
	}
	return Failed
}

// ReadFile reads the report of class at file.
func ReadFile(class, file string) ([]Spec, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("JUnit report of %s: %w", class, err)
	}
	defer f.Close()
	return Read(class, f)
}

// Counts are a row of the summary.
type Counts struct {
	Class, Suite, Mode      string
	Passed, Failed, Skipped int
}

// Summarise counts specs per class, suite and volume mode, sorted, with a total row per class last.
func Summarise(specs []Spec) []Counts {
	rows := map[[3]string]*Counts{}
	add := func(key [3]string, s Spec) {
		c := rows[key]
		if c == nil {
			c = &Counts{Class: key[0], Suite: key[1], Mode: key[2]}
			rows[key] = c
		}
		switch s.Status {
		case Passed:
			c.Passed++
		case Failed:
			c.Failed++
		default:
			c.Skipped++
		}
	}
	for _, s := range specs {
		add([3]string{s.Class, s.Suite, s.Mode}, s)
		add([3]string{s.Class, "~total", ""}, s)
	}
	out := make([]Counts, 0, len(rows))
	for _, c := range rows {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Counts) int {
		return cmp.Or(cmp.Compare(a.Class, b.Class), cmp.Compare(a.Suite, b.Suite), cmp.Compare(a.Mode, b.Mode))
	})
	for i := range out {
		if out[i].Suite == "~total" {
			out[i].Suite = "TOTAL"
		}
	}
	return out
}

// Write prints the summary table, then every failed and every skipped spec with its message. It
// returns an error when a spec failed or no spec passed.
func Write(w io.Writer, specs []Spec) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLASS\tSUITE\tMODE\tPASSED\tFAILED\tSKIPPED")
	passed, failed := 0, 0
	for _, c := range Summarise(specs) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\n", c.Class, c.Suite, c.Mode, c.Passed, c.Failed, c.Skipped)
		if c.Suite == "TOTAL" {
			passed += c.Passed
			failed += c.Failed
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write the summary: %w", err)
	}
	for _, want := range []string{Failed, Skipped} {
		for _, s := range specs {
			if s.Status == want {
				fmt.Fprintf(w, "%s %s: %s\n    %s\n", strings.ToUpper(want), s.Class, s.Name, s.Message)
			}
		}
	}
	switch {
	case failed > 0:
		return fmt.Errorf("%d specs failed", failed)
	case passed == 0:
		return fmt.Errorf("no spec passed in %d", len(specs))
	}
	return nil
}
