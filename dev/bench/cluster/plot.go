package main

import (
	"fmt"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plotResults writes phases.svg (a box plot of every phase that has samples, in seconds) and
// cdf.svg (the share of claims Bound and Running by time since their PVC was created).
func plotResults(dir string, r *result) error {
	if err := plotPhases(filepath.Join(dir, "phases.svg"), r); err != nil {
		return err
	}
	return plotCDF(filepath.Join(dir, "cdf.svg"), r)
}

func plotPhases(file string, r *result) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %d claims, time per phase", r.StorageClass, r.Claims)
	p.Y.Label.Text = "seconds"
	var names []string
	for i, s := range r.Phases {
		if s.N == 0 {
			continue
		}
		vals := make(plotter.Values, len(s.Values))
		for j, v := range s.Values {
			vals[j] = v / 1000
		}
		box, err := plotter.NewBoxPlot(vg.Points(14), float64(len(names)), vals)
		if err != nil {
			return fmt.Errorf("box plot of %s: %w", s.Name, err)
		}
		p.Add(box)
		names = append(names, fmt.Sprintf("%d", i+1))
	}
	p.NominalX(names...)
	p.X.Label.Text = "phase (numbered as in table.txt, phases without samples left out)"
	if err := p.Save(vg.Length(len(names)+2)*vg.Centimeter*1.6, 10*vg.Centimeter, file); err != nil {
		return fmt.Errorf("save %s: %w", file, err)
	}
	return nil
}

// cdf is the empirical distribution of the phase's samples in seconds.
func cdf(s phaseStats) plotter.XYs {
	sorted := slices.Sorted(slices.Values(s.Values))
	xys := make(plotter.XYs, len(sorted))
	for i, v := range sorted {
		xys[i] = plotter.XY{X: v / 1000, Y: float64(i+1) / float64(len(sorted))}
	}
	return xys
}

// cdfLabels name the lines of cdf.svg by their phase's last milestone.
var cdfLabels = map[string]string{mBound: "PVC Bound", mPodRunning: "pod Running", mPVGone: "deleted (PV gone)"}

func plotCDF(file string, r *result) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %d claims", r.StorageClass, r.Claims)
	p.X.Label.Text = "seconds from the PVC's create (deleted: from its delete)"
	p.Y.Label.Text = "share of claims"
	var lines []any
	for _, s := range r.Phases {
		switch s.To {
		case mBound, mPodRunning, mPVGone:
			if s.N > 0 && (s.From == mPVCCreate || s.From == mDeleteStart) {
				lines = append(lines, cdfLabels[s.To], cdf(s))
			}
		}
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return fmt.Errorf("cdf lines: %w", err)
	}
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.XOffs = -5 * vg.Millimeter
	p.Legend.YOffs = 5 * vg.Millimeter
	if err := p.Save(18*vg.Centimeter, 10*vg.Centimeter, file); err != nil {
		return fmt.Errorf("save %s: %w", file, err)
	}
	return nil
}
