package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

const mib = 1 << 20

// writeResults writes results.json, table.md and scale.svg for the steps so far.
func writeResults(dir string, in info, steps []stepResult) error {
	raw, err := json.MarshalIndent(struct {
		Info  info         `json:"info"`
		Steps []stepResult `json:"steps"`
	}{in, steps}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), raw, 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "table.md"), []byte(table(in, steps)), 0o644); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if len(steps) < 2 {
		return nil
	}
	return plotSteps(filepath.Join(dir, "scale.svg"), steps)
}

// table is the summary table, then the requests of our components per step.
func table(in info, steps []stepResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Control-plane scale benchmark at %s, %s. Claims per step: %d; disks %s.\n\n",
		in.Commit, in.Started.Format("2006-01-02 15:04 UTC"), in.Claims, in.Disks)
	b.WriteString("| nodes | add | LVMCluster status all Ready | capacity of all nodes | a joining node: status | " +
		"its capacity | claims Bound | claims/s | ProvisioningFailed | deletion | `kubectl lvms status` | " +
		"operator RSS peak / end | operator CPU (join, steady) | LVMCluster status size |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range steps {
		cmd := fmt.Sprintf("%.2f s", s.StatusCommandSeconds)
		if s.StatusCommandError != "" {
			cmd += " (failed: " + s.StatusCommandError + ")"
		}
		peak := max(s.Join.Operator.PeakRSS, s.Steady.Operator.PeakRSS, s.Work.Operator.PeakRSS)
		fmt.Fprintf(
			&b,
			"| %d | %.1f s | %.1f s | %.1f s | %.1f s | %.1f s | %d in %.1f s (p50 %.1f, p99 %.1f) | %.1f | "+
				"%d | %.1f s | %s | %.1f / %.1f MiB | %.2f, %.3f cores | %.1f KiB |\n",
			s.Nodes,
			s.AddSeconds,
			s.StatusSeconds,
			s.CapacitySeconds,
			s.JoinStatusSeconds,
			s.JoinCapacitySeconds,
			s.Claims,
			s.ClaimsSeconds,
			s.ClaimP50,
			s.ClaimP99,
			s.ClaimsPerSecond,
			s.ProvisioningFailed,
			s.DeleteSeconds,
			cmd,
			float64(peak)/mib,
			float64(s.Work.Operator.EndRSS)/mib,
			s.Join.Operator.Cores,
			s.Steady.Operator.Cores,
			float64(s.StatusBytes)/1024,
		)
	}
	for _, s := range steps {
		fmt.Fprintf(&b, "\n### %d nodes: requests of our components\n\n", s.Nodes)
		fmt.Fprintf(&b, "Joining (%.0f s), steady (%.0f s, per second and per node-hour), claims (%.0f s). "+
			"Simulated agents: %d LVMVolumeGroup reconciles (%d failed), %d LogicalVolume reconciles (%d failed); "+
			"the real agents would have received %d LVMVolumeGroup watch events together (the fleet: %d).\n\n",
			s.Join.Seconds, s.Steady.Seconds, s.Work.Seconds, s.Fleet.VolumeGroupReconciles,
			s.Fleet.VolumeGroupErrors, s.Fleet.LogicalVolumeReconciles, s.Fleet.LogicalVolumeErrors,
			s.Fleet.AgentVolumeGroupEvents, s.Fleet.VolumeGroupEvents)
		b.WriteString("| user | verb | resource | joining | (errors) | steady /s | steady per node-hour | claims |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|\n")
		for _, row := range mergeRequests(s) {
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %.2f | %.2f | %d |\n", row.user, row.verb, row.res, row.join,
				row.joinErr, row.steadyRate, row.steadyRate*3600/float64(s.Nodes), row.work)
		}
	}
	return b.String()
}

type requestRow struct {
	user, verb, res     string
	join, joinErr, work int
	steadyRate          float64
}

// mergeRequests puts a step's three phases' counts side by side.
func mergeRequests(s stepResult) []requestRow {
	idx := map[string]*requestRow{}
	var order []string
	get := func(c requestCount) *requestRow {
		k := c.User + " " + c.Verb + " " + c.Resource
		if r, ok := idx[k]; ok {
			return r
		}
		r := &requestRow{user: c.User, verb: c.Verb, res: c.Resource}
		idx[k] = r
		order = append(order, k)
		return r
	}
	for _, c := range s.Join.Requests {
		r := get(c)
		r.join, r.joinErr = c.Count, c.Errors
	}
	for _, c := range s.Steady.Requests {
		get(c).steadyRate = c.PerSec
	}
	for _, c := range s.Work.Requests {
		get(c).work = c.Count
	}
	out := make([]requestRow, 0, len(order))
	for _, k := range order {
		out = append(out, *idx[k])
	}
	return out
}

// plotSteps draws, against the node count, the operator's peak RSS, the seconds until every
// node's status and capacity, and our components' steady requests per second.
func plotSteps(file string, steps []stepResult) error {
	p := plot.New()
	p.Title.Text = "control plane against node count"
	p.X.Label.Text = "nodes"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{}, plot.LogTicks{}
	line := func(f func(stepResult) float64) plotter.XYs {
		xys := make(plotter.XYs, 0, len(steps))
		for _, s := range steps {
			xys = append(xys, plotter.XY{X: float64(s.Nodes), Y: max(f(s), 0.01)})
		}
		return xys
	}
	steadyRate := func(s stepResult) float64 {
		var sum float64
		for _, c := range s.Steady.Requests {
			sum += c.PerSec
		}
		return sum
	}
	err := plotutil.AddLinePoints(p,
		"operator peak RSS (MiB)", line(func(s stepResult) float64 {
			return float64(max(s.Join.Operator.PeakRSS, s.Steady.Operator.PeakRSS, s.Work.Operator.PeakRSS)) / mib
		}),
		"all nodes' status Ready (s)", line(func(s stepResult) float64 { return s.StatusSeconds }),
		"all nodes' capacity (s)", line(func(s stepResult) float64 { return s.CapacitySeconds }),
		"a joining node's capacity (s)", line(func(s stepResult) float64 { return s.JoinCapacitySeconds }),
		"steady requests/s of our components", line(steadyRate),
	)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := p.Save(18*vg.Centimeter, 12*vg.Centimeter, file); err != nil {
		return fmt.Errorf("save %s: %w", file, err)
	}
	return nil
}
