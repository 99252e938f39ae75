package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// compareMain is `bench-cluster compare RESULT.json RESULT.json...`: the runs of one class by
// several drivers (make bench-peer: lvms, then TopoLVM, each on a fresh cluster of the same shape)
// in one table, side by side, and returns the exit code.
func compareMain(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") }) {
		fmt.Fprintln(stderr, "usage: bench-cluster compare RESULT.json RESULT.json... (the result.json of each run)")
		return 2
	}
	runs := make([]*result, 0, len(args))
	for _, a := range args {
		r, err := readResult(a)
		if err != nil {
			fmt.Fprintln(stderr, "bench-cluster compare:", err)
			return 1
		}
		runs = append(runs, r)
	}
	if err := writeComparison(stdout, runs); err != nil {
		fmt.Fprintln(stderr, "bench-cluster compare:", err)
		return 1
	}
	return 0
}

// readResult reads a run's result.json.
func readResult(path string) (*result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read a run's result: %w", err)
	}
	var r result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	return &r, nil
}

// runLabels name the runs by their driver (the provisioner when they name none), numbered when two
// share a name.
func runLabels(runs []*result) []string {
	labels := make([]string, len(runs))
	seen := map[string]int{}
	for i, r := range runs {
		labels[i] = r.Driver
		if labels[i] == "" {
			labels[i] = r.Provisioner
		}
		seen[labels[i]]++
	}
	for i := range labels {
		if seen[labels[i]] > 1 {
			labels[i] = fmt.Sprintf("%s#%d", labels[i], i+1)
		}
	}
	return labels
}

// writeComparison prints the runs' summaries and floors, then one row per phase with each run's
// n, p50, p99 and p50/floor (each run's ratio to the floor measured in that run), and for every run
// after the first its p50 over the first's. A phase a run did not measure shows "-".
func writeComparison(w io.Writer, runs []*result) error {
	labels := runLabels(runs)
	first := runs[0]
	fmt.Fprintf(w, "\n== %s: %d claims of %s (%s) on %d nodes, concurrency %d\n", first.StorageClass, first.Claims,
		first.Size, first.VolumeMode, len(first.Nodes), first.Concurrency)
	for i, r := range runs {
		fmt.Fprintf(w, "%s %s: class %s, bound %d/%d, running %d/%d, ProvisioningFailed events %d, %d errors, %.1fs\n",
			labels[i], cmp.Or(r.DriverVersion, "(version not recorded)"), r.StorageClass, r.Bound, r.Claims, r.Running,
			r.Claims, r.ProvisioningFailed, len(r.Errors), r.WallSeconds)
		if r.Floor != nil {
			fmt.Fprintf(w, "  floor: %s\n", r.Floor.describe())
		} else {
			fmt.Fprintln(w, "  floor: not measured")
		}
	}
	for _, d := range shapeDifferences(runs, labels) {
		fmt.Fprintf(w, "warning: %s\n", d)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{"#", "phase"}
	for _, l := range labels {
		header = append(header, l+" n", "p50", "p99", "p50/floor")
	}
	for _, l := range labels[1:] {
		header = append(header, "p50 "+l+"/"+labels[0])
	}
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for i, name := range phaseNames(runs) {
		fmt.Fprintln(tw, strings.Join(comparisonRow(i+1, name, runs), "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write the comparison: %w", err)
	}
	return nil
}

// comparisonRow is the row of phase name: its number and name, each run's n, p50, p99 and
// p50/floor, and each later run's p50 over the first's.
func comparisonRow(num int, name string, runs []*result) []string {
	row := []string{fmt.Sprint(num), name}
	stats := make([]*phaseStats, len(runs))
	for i, r := range runs {
		stats[i] = findPhase(r, name)
		s := stats[i]
		if s == nil || s.N == 0 {
			row = append(row, "-", "-", "-", "-")
			continue
		}
		ratio := "-"
		if s.FloorRatio > 0 {
			ratio = fmt.Sprintf("%.2f×", s.FloorRatio)
		}
		row = append(row, fmt.Sprint(s.N), ms(s.P50), ms(s.P99), ratio)
	}
	for _, s := range stats[1:] {
		base := stats[0]
		if s == nil || base == nil || s.N == 0 || base.N == 0 || base.P50 <= 0 {
			row = append(row, "-")
			continue
		}
		row = append(row, fmt.Sprintf("%.2f", s.P50/base.P50))
	}
	return row
}

// phaseNames are the phases of all runs: the first run's in its order, then any other run's.
func phaseNames(runs []*result) []string {
	var names []string
	for _, r := range runs {
		for _, s := range r.Phases {
			if !slices.Contains(names, s.Name) {
				names = append(names, s.Name)
			}
		}
	}
	return names
}

func findPhase(r *result, name string) *phaseStats {
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i]
		}
	}
	return nil
}

// shapeDifferences says how a later run's workload differs from the first's: such runs are not
// comparable row by row.
func shapeDifferences(runs []*result, labels []string) []string {
	var out []string
	a := runs[0]
	for i, b := range runs[1:] {
		for _, d := range []struct {
			what     string
			was, now any
		}{
			{"claims", a.Claims, b.Claims}, {"size", a.Size, b.Size}, {"volume mode", a.VolumeMode, b.VolumeMode},
			{"concurrency", a.Concurrency, b.Concurrency}, {"nodes", len(a.Nodes), len(b.Nodes)},
		} {
			if d.was != d.now {
				out = append(out, fmt.Sprintf("%s ran %v %s, %s %v", labels[i+1], d.now, d.what, labels[0], d.was))
			}
		}
	}
	return out
}
