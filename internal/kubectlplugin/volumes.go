package kubectlplugin

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/placement"
)

// none marks a missing side of a join in tables.
const none = "<none>"

// VolumesReport is what kubectl lvms volumes shows.
type VolumesReport struct {
	// Volumes are the topolvm.io PersistentVolumes, sorted by claim then PV, followed by the
	// LogicalVolumes that no PersistentVolume uses, sorted by volume ID then name.
	Volumes []Volume `json:"volumes"`
}

// Volume is a topolvm.io PersistentVolume joined with its LogicalVolume (status.volumeID equals the
// PV's spec.csi.volumeHandle), or a LogicalVolume that no PersistentVolume uses.
type Volume struct {
	// ClaimNamespace and Claim are the PV's claimRef; empty without a PV or claimRef.
	ClaimNamespace string `json:"claimNamespace,omitempty"`
	Claim          string `json:"claim,omitempty"`
	// PersistentVolume is empty for a LogicalVolume that no PV uses (a leak, or one being created).
	PersistentVolume string `json:"persistentVolume,omitempty"`
	// LogicalVolume is the name of the LogicalVolume object; empty when the PV has none.
	LogicalVolume string `json:"logicalVolume,omitempty"`
	// Node and DeviceClass are the LogicalVolume's spec.nodeName and spec.deviceClass; without a
	// LogicalVolume, Node is the node of the PV's node affinity.
	Node        string `json:"node,omitempty"`
	DeviceClass string `json:"deviceClass,omitempty"`
	// SizeBytes is the LogicalVolume's status.currentSize, else its spec.size, else the PV's capacity.
	SizeBytes int64 `json:"sizeBytes"`
	// VolumeID is the LV on the node: the LogicalVolume's status.volumeID, else the PV's volumeHandle.
	VolumeID string `json:"volumeID,omitempty"`
}

// RunVolumes is kubectl lvms volumes.
func RunVolumes(ctx context.Context, c client.Reader, opts Options, _ []string, out io.Writer) error {
	report, err := Volumes(ctx, c)
	if err != nil {
		return err
	}
	return writeReport(out, opts.Output, report, report.writeTable)
}

// Volumes joins the topolvm.io PersistentVolumes with the LogicalVolumes.
func Volumes(ctx context.Context, c client.Reader) (*VolumesReport, error) {
	pvs, lvs, err := listVolumes(ctx, c)
	if err != nil {
		return nil, err
	}
	byID := map[string]*topolvmv1.LogicalVolume{}
	for i := range lvs {
		if id := lvs[i].Status.VolumeID; id != "" {
			byID[id] = &lvs[i]
		}
	}
	used := map[string]bool{}
	report := &VolumesReport{Volumes: []Volume{}}
	for _, pv := range pvs {
		v := Volume{PersistentVolume: pv.Name, VolumeID: pv.Spec.CSI.VolumeHandle}
		if ref := pv.Spec.ClaimRef; ref != nil {
			v.ClaimNamespace, v.Claim = ref.Namespace, ref.Name
		}
		if q, ok := pv.Spec.Capacity[corev1.ResourceStorage]; ok {
			v.SizeBytes = q.Value()
		}
		v.Node = placement.PVNode(&pv)
		if lv := byID[v.VolumeID]; lv != nil {
			used[lv.Name] = true
			v.fillFrom(lv)
		}
		report.Volumes = append(report.Volumes, v)
	}
	slices.SortFunc(report.Volumes, func(a, b Volume) int {
		return cmp.Or(cmp.Compare(a.ClaimNamespace, b.ClaimNamespace), cmp.Compare(a.Claim, b.Claim),
			cmp.Compare(a.PersistentVolume, b.PersistentVolume))
	})
	var leaked []Volume
	for i := range lvs {
		if !used[lvs[i].Name] {
			var v Volume
			v.fillFrom(&lvs[i])
			leaked = append(leaked, v)
		}
	}
	slices.SortFunc(leaked, func(a, b Volume) int {
		return cmp.Or(cmp.Compare(a.VolumeID, b.VolumeID), cmp.Compare(a.LogicalVolume, b.LogicalVolume))
	})
	report.Volumes = append(report.Volumes, leaked...)
	return report, nil
}

// listVolumes returns the PersistentVolumes of driver topolvm.io and every LogicalVolume.
func listVolumes(
	ctx context.Context, c client.Reader,
) ([]corev1.PersistentVolume, []topolvmv1.LogicalVolume, error) {
	var pvList corev1.PersistentVolumeList
	if err := c.List(ctx, &pvList); err != nil {
		return nil, nil, fmt.Errorf("list PersistentVolumes: %w", err)
	}
	var lvList topolvmv1.LogicalVolumeList
	if err := c.List(ctx, &lvList); err != nil {
		return nil, nil, fmt.Errorf("list LogicalVolumes: %w", err)
	}
	pvs := slices.DeleteFunc(pvList.Items, func(pv corev1.PersistentVolume) bool {
		return pv.Spec.CSI == nil || pv.Spec.CSI.Driver != driver.Name
	})
	return pvs, lvList.Items, nil
}

// fillFrom sets what the LogicalVolume says about the volume.
func (v *Volume) fillFrom(lv *topolvmv1.LogicalVolume) {
	v.LogicalVolume = lv.Name
	v.Node, v.DeviceClass = lv.Spec.NodeName, lv.Spec.DeviceClass
	v.SizeBytes = placement.LogicalVolumeSize(lv)
	if lv.Status.VolumeID != "" {
		v.VolumeID = lv.Status.VolumeID
	}
}

func (r *VolumesReport) writeTable(out io.Writer) error {
	if len(r.Volumes) == 0 {
		_, err := fmt.Fprintln(out, "No topolvm.io PersistentVolume and no LogicalVolume.")
		return err
	}
	t := newTable(out, "NAMESPACE/PVC", "PV", "NODE", "CLASS", "SIZE", "LV")
	var unused []string
	for _, v := range r.Volumes {
		if v.PersistentVolume == "" {
			unused = append(unused, v.LogicalVolume)
		}
		claim := none
		if v.Claim != "" {
			claim = v.ClaimNamespace + "/" + v.Claim
		}
		pv := cmp.Or(v.PersistentVolume, none)
		lv := v.VolumeID
		if v.LogicalVolume == "" {
			lv = none // the PV's LogicalVolume is gone
		}
		t.row(claim, pv, orDash(v.Node), orDash(v.DeviceClass), placement.FormatBytes(v.SizeBytes), orDash(lv))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(unused) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(
		out,
		"\nLogicalVolumes that no PersistentVolume uses (leaked, or still being provisioned): %s\n",
		strings.Join(unused, ", "),
	)
	return err
}
