package kubectlplugin

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/placement"
)

// DisksReport is what kubectl lvms disks shows.
type DisksReport struct {
	// Disks has one entry per node and device, sorted by node, then device.
	Disks []Disk `json:"disks"`
}

// Disk is one device of one node as the node agent reported it.
type Disk struct {
	Node   string `json:"node"`
	Device string `json:"device"`
	// UsedBy are the device classes whose volume group has the device as a physical volume (one,
	// unless the node reports something odd). Empty when the device is excluded.
	UsedBy []string `json:"usedBy,omitempty"`
	// ExcludedBy are the device classes that did not use the device, when no device class uses it.
	ExcludedBy []string `json:"excludedBy,omitempty"`
	// Reasons are why the device classes of ExcludedBy did not use it, each reason once.
	Reasons []string `json:"reasons,omitempty"`
	// LogicalVolume is set for an excluded LVM logical volume (a thin pool and its parts, a volume):
	// the node reports it, but it is never a disk to build on, so the table leaves it out.
	LogicalVolume bool `json:"logicalVolume,omitempty"`
	// KubeletLoop is set for an excluded loop device the kubelet attached to a Block volume in use:
	// the node reports it, but the table leaves it out, as it does logical volumes.
	KubeletLoop bool `json:"kubeletLoop,omitempty"`
	// EncryptedVolume is set for the excluded dm-crypt mapping of an LVM logical volume (an encrypted
	// volume while it is staged on the node): left out of the table too.
	EncryptedVolume bool `json:"encryptedVolume,omitempty"`
}

// The device filter's reasons (internal/devices) for an LVM logical volume and the dm-crypt mapping of
// one (rejectType), and for a loop device of the kubelet (rejectKubeletLoop).
const (
	lvReason          = "(type lvm)"
	encryptedLVReason = "is the dm-crypt mapping of an LVM logical volume (type crypt)"
	kubeletLoopReason = "is a loop device backing kubelet plugin storage"
)

// RunDisks is kubectl lvms disks [node].
func RunDisks(ctx context.Context, c client.Reader, opts Options, args []string, out io.Writer) error {
	node := ""
	if len(args) > 0 {
		node = args[0]
	}
	report, err := Disks(ctx, c, opts.OperatorNamespace, node)
	if err != nil {
		return err
	}
	return writeReport(out, opts.Output, report, report.writeTable)
}

// Disks reads the LVMVolumeGroupNodeStatuses of namespace, of every node or of node only.
func Disks(ctx context.Context, c client.Reader, namespace, node string) (*DisksReport, error) {
	var statuses []lvmv1alpha1.LVMVolumeGroupNodeStatus
	if node == "" {
		var err error
		if statuses, err = placement.ListNodeStatuses(ctx, c, namespace); err != nil {
			return nil, err
		}
	} else {
		var ns lvmv1alpha1.LVMVolumeGroupNodeStatus
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: node}, &ns)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("node %s has no LVMVolumeGroupNodeStatus in %s: the node agent has not "+
				"reported from it (does a device class select it, and does the lvms-node pod run there?)",
				node, namespace)
		}
		if err != nil {
			return nil, fmt.Errorf("get LVMVolumeGroupNodeStatus %s/%s: %w", namespace, node, err)
		}
		statuses = append(statuses, ns)
	}
	report := &DisksReport{Disks: []Disk{}}
	for _, ns := range statuses {
		report.Disks = append(report.Disks, nodeDisks(ns)...)
	}
	return report, nil
}

// nodeDisks merges what every device class of one node says about each device: a device used by a
// device class is shown as such, whatever the others excluded it for; a device no class uses carries
// the reasons of every class that excluded it.
func nodeDisks(ns lvmv1alpha1.LVMVolumeGroupNodeStatus) []Disk {
	vgs := slices.Clone(ns.Spec.LiveNodeStatus)
	slices.SortFunc(vgs, func(a, b lvmv1alpha1.VGStatus) int { return cmp.Compare(a.Name, b.Name) })
	byDevice := map[string]*Disk{}
	disk := func(name string) *Disk {
		d, ok := byDevice[name]
		if !ok {
			d = &Disk{Node: ns.Name, Device: name}
			byDevice[name] = d
		}
		return d
	}
	for _, vg := range vgs {
		for _, dev := range vg.Devices {
			d := disk(dev)
			d.UsedBy = appendNew(d.UsedBy, vg.Name)
		}
		for _, ex := range vg.Excluded {
			d := disk(ex.Name)
			d.ExcludedBy = appendNew(d.ExcludedBy, vg.Name)
			for _, r := range ex.Reasons {
				d.Reasons = appendNew(d.Reasons, r)
			}
		}
	}
	out := make([]Disk, 0, len(byDevice))
	for _, d := range byDevice {
		if len(d.UsedBy) > 0 {
			d.ExcludedBy, d.Reasons = nil, nil
		}
		d.LogicalVolume = slices.ContainsFunc(d.Reasons, func(r string) bool { return strings.HasSuffix(r, lvReason) })
		d.EncryptedVolume = !d.LogicalVolume && slices.Contains(d.Reasons, encryptedLVReason)
		d.KubeletLoop = !d.LogicalVolume && !d.EncryptedVolume && slices.Contains(d.Reasons, kubeletLoopReason)
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b Disk) int { return cmp.Compare(a.Device, b.Device) })
	return out
}

// appendNew appends s unless list already holds it.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// Verdict is the VERDICT cell: "in use by <class>" or "excluded: <reasons>".
func (d Disk) Verdict() string {
	if len(d.UsedBy) > 0 {
		return "in use by " + strings.Join(d.UsedBy, ", ")
	}
	if len(d.Reasons) == 0 {
		return "excluded"
	}
	return "excluded: " + strings.Join(d.Reasons, "; ")
}

func (r *DisksReport) writeTable(out io.Writer) error {
	if len(r.Disks) == 0 {
		_, err := fmt.Fprintln(out, "No node has reported a disk yet (no LVMVolumeGroupNodeStatus lists one).")
		return err
	}
	t := newTable(out, "NODE", "DEVICE", "CLASS", "VERDICT")
	var left leftOut
	for _, d := range r.Disks {
		if left.skip(d) {
			continue
		}
		class := strings.Join(d.UsedBy, ",")
		if class == "" {
			class = strings.Join(d.ExcludedBy, ",")
		}
		t.row(d.Node, d.Device, orDash(class), d.Verdict())
	}
	if err := t.flush(); err != nil {
		return err
	}
	return left.write(out)
}
