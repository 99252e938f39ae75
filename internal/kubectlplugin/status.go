package kubectlplugin

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/placement"
)

// StatusReport is what kubectl lvms status shows.
type StatusReport struct {
	// OperatorNamespace is where the objects were read.
	OperatorNamespace string `json:"operatorNamespace"`
	// Clusters are the LVMClusters of the operator namespace (normally one).
	Clusters []ClusterStatus `json:"clusters"`
	// VolumeGroups has one entry per node and device class, sorted by node, then device class.
	VolumeGroups []VolumeGroupStatus `json:"volumeGroups"`
}

// ClusterStatus is the summary of one LVMCluster.
type ClusterStatus struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// State is status.state.
	State string `json:"state"`
	// VolumeGroups is the message of the VolumeGroupsReady condition.
	VolumeGroups string `json:"volumeGroups"`
}

// VolumeGroupStatus is the volume group of one device class on one node, from the node's
// LVMVolumeGroupNodeStatus.
type VolumeGroupStatus struct {
	Node        string `json:"node"`
	DeviceClass string `json:"deviceClass"`
	// State is Ready, Progressing, Degraded or Failed (Progressing when the node reported none).
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// SizeBytes and FreeBytes are the volume group's; unset until the node reports capacity.
	SizeBytes *int64          `json:"sizeBytes,omitempty"`
	FreeBytes *int64          `json:"freeBytes,omitempty"`
	ThinPool  *ThinPoolStatus `json:"thinPool,omitempty"`
	// UsedPercent is what the bar shows: the thin pool's data percent, or for a thick device class the
	// share of the volume group that logical volumes use. Unset when unknown.
	UsedPercent *float64 `json:"usedPercent,omitempty"`
}

// ThinPoolStatus is the thin pool of a thin device class on one node.
type ThinPoolStatus struct {
	Name            string `json:"name"`
	SizeBytes       int64  `json:"sizeBytes"`
	DataPercent     string `json:"dataPercent"`
	MetadataPercent string `json:"metadataPercent"`
}

// RunStatus is kubectl lvms status.
func RunStatus(ctx context.Context, c client.Reader, opts Options, _ []string, out io.Writer) error {
	report, err := Status(ctx, c, opts.OperatorNamespace)
	if err != nil {
		return err
	}
	return writeReport(out, opts.Output, report, report.writeTable)
}

// Status reads the LVMClusters and LVMVolumeGroupNodeStatuses of namespace.
func Status(ctx context.Context, c client.Reader, namespace string) (*StatusReport, error) {
	var clusters lvmv1alpha1.LVMClusterList
	if err := c.List(ctx, &clusters, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list LVMClusters in %s: %w", namespace, err)
	}
	nodes, err := placement.ListNodeStatuses(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	report := &StatusReport{
		OperatorNamespace: namespace, Clusters: []ClusterStatus{}, VolumeGroups: []VolumeGroupStatus{},
	}
	for _, lc := range clusters.Items {
		cs := ClusterStatus{Namespace: lc.Namespace, Name: lc.Name, State: string(lc.Status.State)}
		if cond := meta.FindStatusCondition(lc.Status.Conditions, lvmv1alpha1.ConditionVolumeGroupsReady); cond != nil {
			cs.VolumeGroups = cond.Message
		}
		report.Clusters = append(report.Clusters, cs)
	}
	slices.SortFunc(report.Clusters, func(a, b ClusterStatus) int { return cmp.Compare(a.Name, b.Name) })
	for _, ns := range nodes {
		for _, vg := range ns.Spec.LiveNodeStatus {
			report.VolumeGroups = append(report.VolumeGroups, volumeGroupStatus(ns.Name, vg))
		}
	}
	slices.SortFunc(report.VolumeGroups, func(a, b VolumeGroupStatus) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.DeviceClass, b.DeviceClass))
	})
	return report, nil
}

func volumeGroupStatus(node string, vg lvmv1alpha1.VGStatus) VolumeGroupStatus {
	out := VolumeGroupStatus{Node: node, DeviceClass: vg.Name, State: placement.VGState(vg), Reason: vg.Reason}
	capacity := vg.Capacity
	if capacity == nil {
		return out
	}
	size, free := capacity.Size.Value(), capacity.Free.Value()
	out.SizeBytes, out.FreeBytes = &size, &free
	if tp := capacity.ThinPool; tp != nil {
		out.ThinPool = &ThinPoolStatus{
			Name: tp.Name, SizeBytes: tp.Size.Value(), DataPercent: tp.DataPercent, MetadataPercent: tp.MetadataPercent,
		}
		if p, err := strconv.ParseFloat(tp.DataPercent, 64); err == nil {
			out.UsedPercent = &p
		}
		return out
	}
	if size > 0 {
		// One decimal, rounded down, as lvm2 reports the thin pool's percentages.
		p := math.Floor(float64(size-free)*1000/float64(size)) / 10
		out.UsedPercent = &p
	}
	return out
}

func (r *StatusReport) writeTable(out io.Writer) error {
	if len(r.Clusters) == 0 {
		if _, err := fmt.Fprintf(out, "No LVMCluster in namespace %s (see --operator-namespace).\n",
			r.OperatorNamespace); err != nil {
			return err
		}
	}
	for _, c := range r.Clusters {
		if _, err := fmt.Fprintf(out, "LVMCluster %s/%s: %s\n  VolumeGroupsReady: %s\n",
			c.Namespace, c.Name, orDash(c.State), orDash(c.VolumeGroups)); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintln(out); err != nil {
		return err
	}
	if len(r.VolumeGroups) == 0 {
		_, err := fmt.Fprintln(out, "No node has reported a volume group yet (no LVMVolumeGroupNodeStatus).")
		return err
	}
	t := newTable(out, "NODE", "CLASS", "STATE", "SIZE", "FREE", "POOL", "DATA", "META", "USED")
	var notReady []VolumeGroupStatus
	for _, vg := range r.VolumeGroups {
		t.row(vg.tableCells()...)
		if vg.State != string(lvmv1alpha1.VGStatusReady) {
			notReady = append(notReady, vg)
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(notReady) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(out, "\nNot Ready:"); err != nil {
		return err
	}
	for _, vg := range notReady {
		if _, err := fmt.Fprintf(out, "  %s/%s is %s: %s\n",
			vg.Node, vg.DeviceClass, vg.State, orDash(vg.Reason)); err != nil {
			return err
		}
	}
	return nil
}

func (vg VolumeGroupStatus) tableCells() []string {
	cells := []string{vg.Node, vg.DeviceClass, vg.State, "-", "-", "-", "-", "-", "-"}
	if vg.SizeBytes != nil && vg.FreeBytes != nil {
		cells[3], cells[4] = placement.FormatBytes(*vg.SizeBytes), placement.FormatBytes(*vg.FreeBytes)
	}
	if tp := vg.ThinPool; tp != nil {
		cells[5] = fmt.Sprintf("%s (%s)", tp.Name, placement.FormatBytes(tp.SizeBytes))
		cells[6], cells[7] = tp.DataPercent+"%", tp.MetadataPercent+"%"
	}
	if vg.UsedPercent != nil {
		cells[8] = usageBar(*vg.UsedPercent)
	}
	return cells
}
