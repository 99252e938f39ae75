package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Milestones of a claim, in the order they happen. Each is the wall-clock time (on the machine
// running the benchmark) at which the benchmark issued the request or its watch saw the change.
const (
	mPVCCreate     = "pvcCreate"     // just before the PVC's create request
	mSelectedNode  = "selectedNode"  // PVC annotation volume.kubernetes.io/selected-node set
	mLVObject      = "lvObject"      // LogicalVolume (topolvm.io/v1) for the claim's volume exists
	mLVCreated     = "lvCreated"     // LogicalVolume status.volumeID set: the LV exists on the node
	mBound         = "bound"         // PVC phase Bound
	mPodRunning    = "podRunning"    // the claim's pod phase Running
	mSnapCreate    = "snapCreate"    // just before the VolumeSnapshot's create request
	mSnapReady     = "snapReady"     // VolumeSnapshot status.readyToUse true
	mDeleteStart   = "deleteStart"   // just before the PVC's delete request (its pod is gone)
	mPVGone        = "pvGone"        // the PV's deletion seen
	mLVDeleting    = "lvDeleting"    // the LogicalVolume's deletionTimestamp seen (DeleteVolume reached it)
	mLVObjectGone  = "lvObjectGone"  // the LogicalVolume's deletion seen
	mPodDeleteSent = "podDeleteSent" // just before the pod's delete request
	mPodGone       = "podGone"       // the pod's deletion seen
)

// phase is one row of the report: the time from one milestone to another.
type phase struct {
	Name string
	From string
	To   string
	// Floor is the floor the row is compared with: floorCreate, floorDelete or "" (none).
	Floor string
}

const (
	floorCreate = "create"
	floorDelete = "delete"
)

// phases are the report's rows: the steps of provisioning, then the totals a user sees, then
// deletion.
var phases = []phase{
	{Name: "PVC → selected-node (scheduler)", From: mPVCCreate, To: mSelectedNode},
	{Name: "selected-node → LogicalVolume", From: mSelectedNode, To: mLVObject},
	{Name: "LogicalVolume → LV created", From: mLVObject, To: mLVCreated, Floor: floorCreate},
	{Name: "LV created → PVC Bound", From: mLVCreated, To: mBound},
	{Name: "selected-node → PVC Bound", From: mSelectedNode, To: mBound, Floor: floorCreate},
	{Name: "PVC Bound → Pod Running", From: mBound, To: mPodRunning},
	{Name: "PVC → Bound (total)", From: mPVCCreate, To: mBound, Floor: floorCreate},
	{Name: "PVC → Pod Running (total)", From: mPVCCreate, To: mPodRunning},
	{Name: "snapshot → readyToUse", From: mSnapCreate, To: mSnapReady},
	{Name: "pod delete → pod gone", From: mPodDeleteSent, To: mPodGone},
	{Name: "PVC delete → LogicalVolume deleting", From: mDeleteStart, To: mLVDeleting},
	{Name: "LogicalVolume deleting → gone", From: mLVDeleting, To: mLVObjectGone, Floor: floorDelete},
	{Name: "PVC delete → LogicalVolume gone", From: mDeleteStart, To: mLVObjectGone, Floor: floorDelete},
	{Name: "PVC delete → PV gone", From: mDeleteStart, To: mPVGone, Floor: floorDelete},
}

// claimTimes are one claim's milestones.
type claimTimes struct {
	Claim      string               `json:"claim"`
	Node       string               `json:"node,omitempty"`
	Volume     string               `json:"volume,omitempty"`
	Milestones map[string]time.Time `json:"milestones"`
}

// phaseStats summarises one phase over all claims that reached both of its milestones.
type phaseStats struct {
	Name string `json:"name"`
	From string `json:"from"`
	To   string `json:"to"`
	N    int    `json:"n"`
	// Milliseconds.
	P50 float64 `json:"p50Ms"`
	P90 float64 `json:"p90Ms"`
	P99 float64 `json:"p99Ms"`
	Max float64 `json:"maxMs"`
	// FloorRatio is P50 divided by the floor of the phase (0: no floor).
	FloorRatio float64 `json:"floorRatio,omitempty"`
	// Values are the samples in milliseconds, in claim order (for the plots).
	Values []float64 `json:"valuesMs"`
}

// percentile is the nearest-rank percentile p (0 < p ≤ 100) of sorted; 0 for no samples.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := max(int(math.Ceil(p/100*float64(len(sorted)))), 1)
	return sorted[min(rank, len(sorted))-1]
}

// summarise computes the statistics of every phase; floors maps floorCreate / floorDelete to
// milliseconds (missing or 0: no ratio).
func summarise(claims []claimTimes, floors map[string]float64) []phaseStats {
	out := make([]phaseStats, 0, len(phases))
	for _, ph := range phases {
		s := phaseStats{Name: ph.Name, From: ph.From, To: ph.To}
		for _, c := range claims {
			from, ok1 := c.Milestones[ph.From]
			to, ok2 := c.Milestones[ph.To]
			if ok1 && ok2 {
				s.Values = append(s.Values, float64(to.Sub(from).Microseconds())/1000)
			}
		}
		sorted := slices.Sorted(slices.Values(s.Values))
		s.N = len(sorted)
		s.P50, s.P90, s.P99 = percentile(sorted, 50), percentile(sorted, 90), percentile(sorted, 99)
		if s.N > 0 {
			s.Max = sorted[s.N-1]
		}
		if f := floors[ph.Floor]; f > 0 && s.N > 0 {
			s.FloorRatio = s.P50 / f
		}
		out = append(out, s)
	}
	return out
}

// result is everything one run measured; it is written as JSON.
type result struct {
	StorageClass string `json:"storageClass"`
	Provisioner  string `json:"provisioner"`
	// Driver is the implementation of a topolvm.io class (driverLvms, driverTopoLVM; --driver) and
	// DriverVersion what --driver-version said; both empty for another provisioner.
	Driver             string          `json:"driver,omitempty"`
	DriverVersion      string          `json:"driverVersion,omitempty"`
	Claims             int             `json:"claims"`
	Nodes              []string        `json:"nodes"`
	Concurrency        int             `json:"concurrency"`
	Size               string          `json:"size"`
	VolumeMode         string          `json:"volumeMode"`
	Started            time.Time       `json:"started"`
	WallSeconds        float64         `json:"wallSeconds"`
	Bound              int             `json:"bound"`
	Running            int             `json:"running"`
	PerNode            map[string]int  `json:"claimsPerNode"`
	ProvisioningFailed int             `json:"provisioningFailedEvents"`
	FailureMessages    []string        `json:"failureMessages,omitempty"`
	Errors             []string        `json:"errors,omitempty"`
	Floor              *floor          `json:"floor,omitempty"`
	Phases             []phaseStats    `json:"phases"`
	Resources          []resourceUsage `json:"resources,omitempty"`
	ClaimTimes         []claimTimes    `json:"claimTimes"`
}

// driverLabel is ", driver <driver> <version>" for a run that names its driver, else "".
func (r *result) driverLabel() string {
	if r.Driver == "" {
		return ""
	}
	return strings.TrimRight(", driver "+r.Driver+" "+r.DriverVersion, " ")
}

// ms formats milliseconds for the table.
func ms(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.1fs", v/1000)
	case v >= 1000:
		return fmt.Sprintf("%.2fs", v/1000)
	default:
		return fmt.Sprintf("%.0fms", v)
	}
}

// writeTable prints the run's summary and its phase table.
func writeTable(w io.Writer, r *result) error {
	fmt.Fprintf(w, "\n== %s (provisioner %s%s): %d claims of %s (%s) on %s, concurrency %d, %.1fs\n",
		r.StorageClass, r.Provisioner, r.driverLabel(), r.Claims, r.Size, r.VolumeMode, strings.Join(r.Nodes, ","),
		r.Concurrency, r.WallSeconds)
	fmt.Fprintf(w, "bound %d/%d, running %d/%d, ProvisioningFailed events %d, claims per node %v\n",
		r.Bound, r.Claims, r.Running, r.Claims, r.ProvisioningFailed, r.PerNode)
	for _, m := range r.FailureMessages {
		fmt.Fprintf(w, "  ProvisioningFailed: %s\n", m)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  error: %s\n", e)
	}
	if f := r.Floor; f != nil {
		fmt.Fprintf(w, "floor: %s\n", f.describe())
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "#\tphase\tn\tp50\tp90\tp99\tmax\tp50/floor\tp99/p50\t")
	for i, s := range r.Phases {
		if s.N == 0 {
			fmt.Fprintf(tw, "%d\t%s\t0\t-\t-\t-\t-\t-\t-\t\n", i+1, s.Name)
			continue
		}
		ratio := "-"
		if s.FloorRatio > 0 {
			ratio = fmt.Sprintf("%.2f×", s.FloorRatio)
		}
		spread := "-"
		if s.P50 > 0 {
			spread = fmt.Sprintf("%.2f", s.P99/s.P50)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			i+1, s.Name, s.N, ms(s.P50), ms(s.P90), ms(s.P99), ms(s.Max), ratio, spread)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write the table: %w", err)
	}
	for _, u := range r.Resources {
		fmt.Fprintf(w, "resources %s\n", u.describe())
	}
	return nil
}

// writeJSON writes v, indented, to dir/name, creating dir.
func writeJSON(dir, name string, v any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results dir: %w", err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// writeResults writes result.json and the table (table.txt) into dir.
func writeResults(dir string, r *result) error {
	if err := writeJSON(dir, "result.json", r); err != nil {
		return err
	}
	var sb strings.Builder
	if err := writeTable(&sb, r); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "table.txt"), []byte(sb.String()), 0o644); err != nil {
		return fmt.Errorf("write table.txt: %w", err)
	}
	return nil
}
