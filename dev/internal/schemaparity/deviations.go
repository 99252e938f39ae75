package schemaparity

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// Deviation is one row of docs/api-compat.md's schema-parity table: the findings of the listed kinds,
// paths and checks are differences we keep, for the reason the row gives. A path may end or start
// with "*", which matches any characters.
type Deviation struct {
	ID     string
	Kinds  []string
	Paths  []*regexp.Regexp
	Checks []string
}

var (
	deviationRow = regexp.MustCompile(`^\|\s*(P[0-9]+)\s*\|([^|]*)\|([^|]*)\|([^|]*)\|`)
	backticked   = regexp.MustCompile("`([^`]+)`")
)

// ReadDeviations reads the rows "| P<n> | kinds | `path`, ... | `check`, ... | why |" of a Markdown
// document.
func ReadDeviations(r io.Reader) ([]Deviation, error) {
	var out []Deviation
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := deviationRow.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		d := Deviation{ID: m[1]}
		for k := range strings.SplitSeq(m[2], ",") {
			if k = strings.TrimSpace(k); k != "" {
				d.Kinds = append(d.Kinds, k)
			}
		}
		for _, p := range backticked.FindAllStringSubmatch(m[3], -1) {
			d.Paths = append(d.Paths, glob(p[1]))
		}
		for _, c := range backticked.FindAllStringSubmatch(m[4], -1) {
			d.Checks = append(d.Checks, c[1])
		}
		if len(d.Kinds) == 0 || len(d.Paths) == 0 || len(d.Checks) == 0 {
			return nil, fmt.Errorf("deviation %s: it needs kinds, `paths` and `checks`", d.ID)
		}
		out = append(out, d)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read deviations: %w", err)
	}
	return out, nil
}

func glob(p string) *regexp.Regexp {
	return regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(p), `\*`, ".*") + "$")
}

// Covers reports whether the deviation lists the finding.
func (d Deviation) Covers(f Finding) bool {
	check := f.Check
	if strings.HasPrefix(check, "rule ") {
		check = "rule"
	}
	if !slices.Contains(d.Kinds, f.Kind) || !slices.Contains(d.Checks, check) {
		return false
	}
	for _, p := range d.Paths {
		if p.MatchString(pathOrRoot(f.Path)) {
			return true
		}
	}
	return false
}
