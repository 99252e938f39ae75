package kubectlplugin

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// PlanReport is what kubectl lvms plan shows: what every selected node would do for every device
// class of a dry-run LVMCluster, from its status.
type PlanReport struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Plans has one entry per device class and selected node, sorted by node, then device class;
	// device classes without a node come last.
	Plans []ClassPlan `json:"plans"`
	// DisksNotUsed are the disks of the nodes that no device class would use (none of the node's
	// device classes takes them, and none is to wipe them), sorted by node, then device.
	DisksNotUsed []Disk `json:"disksNotUsed"`
	// Waiting says what has not reported yet; empty when the plan is complete.
	Waiting []string `json:"waiting,omitempty"`
}

// What a node would do for a device class (ClassPlan.Plan).
const (
	// PlanChanges: the node would change its disks; Steps say how, in order.
	PlanChanges = "Changes"
	// PlanNothingToChange: the volume group exists as the device class asks (Ready), or with a
	// problem no change would fix (Degraded: Reason).
	PlanNothingToChange = "NothingToChange"
	// PlanCannotBeBuilt: the node reports the volume group Failed; Reason says why.
	PlanCannotBeBuilt = "CannotBeBuilt"
	// PlanNoNodeSelected: no schedulable node matches the device class.
	PlanNoNodeSelected = "NoNodeSelected"
	// PlanWaiting: the node agent (or, without a node, the operator) has not reported yet.
	PlanWaiting = "Waiting"
	// PlanOther: a state a dry-run node does not normally report; State and Reason say it.
	PlanOther = "Other"
)

// ClassPlan is what one node would do for one device class.
type ClassPlan struct {
	// Node is empty when no node is selected, or while the operator has not reported the class.
	Node        string `json:"node,omitempty"`
	DeviceClass string `json:"deviceClass"`
	// Plan is PlanChanges, PlanNothingToChange, PlanCannotBeBuilt, PlanNoNodeSelected, PlanWaiting or
	// PlanOther.
	Plan string `json:"plan"`
	// State is the volume group's state on the node (Progressing while it would change something).
	State string `json:"state,omitempty"`
	// Steps are the changes of PlanChanges, as the node agent wrote them.
	Steps []string `json:"steps,omitempty"`
	// Reason is the node's reason for any other plan.
	Reason string `json:"reason,omitempty"`
}

// buildPlanReport reads the plan out of the status of the dry-run LVMCluster lc.
func buildPlanReport(lc *lvmv1alpha1.LVMCluster) *PlanReport {
	r := &PlanReport{Namespace: lc.Namespace, Name: lc.Name, Plans: []ClassPlan{}, DisksNotUsed: []Disk{}}
	if lc.Status.ObservedGeneration != lc.Generation {
		r.Waiting = append(
			r.Waiting,
			fmt.Sprintf("the operator to observe generation %d (status.observedGeneration is %d)",
				lc.Generation, lc.Status.ObservedGeneration),
		)
	}
	reported := map[string]lvmv1alpha1.DeviceClassStatus{}
	for _, dcs := range lc.Status.DeviceClassStatuses {
		reported[dcs.Name] = dcs
	}
	// The entries each node reported, for the disks no device class of the node uses.
	byNode := map[string][]lvmv1alpha1.VGStatus{}
	for _, dc := range lc.Spec.Storage.DeviceClasses {
		dcs, ok := reported[dc.Name]
		switch {
		case !ok:
			r.Plans = append(r.Plans, ClassPlan{DeviceClass: dc.Name, Plan: PlanWaiting})
			r.Waiting = append(r.Waiting, "the operator to report device class "+dc.Name)
			continue
		case len(dcs.NodeStatus) == 0:
			r.Plans = append(r.Plans, ClassPlan{DeviceClass: dc.Name, Plan: PlanNoNodeSelected})
			continue
		}
		for _, ns := range dcs.NodeStatus {
			p := classPlan(ns.Node, dc.Name, ns.VGStatus)
			r.Plans = append(r.Plans, p)
			if p.Plan == PlanWaiting {
				r.Waiting = append(r.Waiting, fmt.Sprintf("node %s to report device class %s", ns.Node, dc.Name))
				continue
			}
			byNode[ns.Node] = append(byNode[ns.Node], ns.VGStatus)
		}
	}
	slices.SortFunc(r.Plans, func(a, b ClassPlan) int {
		return cmp.Or(cmp.Compare(nodeless(a), nodeless(b)), cmp.Compare(a.Node, b.Node),
			cmp.Compare(a.DeviceClass, b.DeviceClass))
	})
	r.DisksNotUsed = disksNotUsed(byNode)
	cond := meta.FindStatusCondition(lc.Status.Conditions, lvmv1alpha1.ConditionResourcesAvailable)
	if len(r.Waiting) > 0 && cond != nil && cond.Status != metav1.ConditionTrue {
		// Why the node agents may never report: the operator could not deploy them, or refuses the
		// LVMCluster (another one exists, or it is outside the operator's namespace).
		r.Waiting = append(r.Waiting, fmt.Sprintf("the operator's condition ResourcesAvailable, %s: %s: %s",
			cond.Status, cond.Reason, cond.Message))
	}
	return r
}

// nodeless is 1 for a plan without a node (sorted last), else 0.
func nodeless(p ClassPlan) int {
	if p.Node == "" {
		return 1
	}
	return 0
}

// classPlan is one node's plan for device class dc, from its entry in the LVMCluster status.
func classPlan(node, dc string, vg lvmv1alpha1.VGStatus) ClassPlan {
	p := ClassPlan{Node: node, DeviceClass: dc, State: string(vg.Status), Reason: vg.Reason}
	switch {
	case vg.Reason == lvmv1alpha1.ReasonWaitingForNodeAgent:
		p.Plan, p.State, p.Reason = PlanWaiting, "", ""
	case vg.Status == lvmv1alpha1.VGStatusProgressing && strings.HasPrefix(vg.Reason, lvmv1alpha1.DryRunReasonPrefix):
		// The node agent joins its steps with "; " and no step contains it (vgmanager's changes()).
		p.Plan, p.Reason = PlanChanges, ""
		p.Steps = strings.Split(strings.TrimPrefix(vg.Reason, lvmv1alpha1.DryRunReasonPrefix), "; ")
	case vg.Status == lvmv1alpha1.VGStatusReady, vg.Status == lvmv1alpha1.VGStatusDegraded:
		p.Plan = PlanNothingToChange
	case vg.Status == lvmv1alpha1.VGStatusFailed:
		p.Plan = PlanCannotBeBuilt
	default:
		p.Plan = PlanOther
	}
	return p
}

// disksNotUsed are the disks that every device class reporting from a node excluded, except those
// to be wiped for a volume group. Every device class lists the disks it does not take, so a disk
// that one class takes is in the others' lists, but not in its own.
func disksNotUsed(byNode map[string][]lvmv1alpha1.VGStatus) []Disk {
	out := []Disk{}
	for _, node := range slices.Sorted(maps.Keys(byNode)) {
		vgs := byNode[node]
		ns := lvmv1alpha1.LVMVolumeGroupNodeStatus{}
		ns.Name, ns.Spec.LiveNodeStatus = node, vgs
		for _, d := range nodeDisks(ns) {
			if len(d.UsedBy) == 0 && len(d.ExcludedBy) == len(vgs) &&
				!slices.Contains(d.Reasons, lvmv1alpha1.ExcludedWillBeWiped) {
				out = append(out, d)
			}
		}
	}
	return out
}

// lines are the PLAN cell of the table, one line each.
func (p ClassPlan) lines() []string {
	switch p.Plan {
	case PlanChanges:
		return p.Steps
	case PlanNothingToChange:
		if p.Reason == "" {
			return []string{"nothing to change"}
		}
		return []string{"nothing to change", p.State + ": " + p.Reason}
	case PlanCannotBeBuilt:
		return []string{"cannot be built: " + p.Reason}
	case PlanNoNodeSelected:
		return []string{"no node selected (check the nodeSelector, and the nodes' taints against the tolerations)"}
	case PlanWaiting:
		if p.Node == "" {
			return []string{"waiting for the operator to report this device class"}
		}
		return []string{"waiting for the node agent to report"}
	default:
		return []string{orDash(p.State) + ": " + orDash(p.Reason)}
	}
}

func (r *PlanReport) writeTable(out io.Writer) error {
	if _, err := fmt.Fprintf(out, "LVMCluster %s/%s is a plan (dry-run): nothing was changed on any disk.\n\n",
		r.Namespace, r.Name); err != nil {
		return err
	}
	t := newTable(out, "NODE", "CLASS", "PLAN")
	for _, p := range r.Plans {
		for i, l := range p.lines() {
			if i == 0 {
				t.row(orDash(p.Node), p.DeviceClass, l)
			} else {
				t.row("", "", l)
			}
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	if err := r.writeDisksNotUsed(out); err != nil {
		return err
	}
	return r.writeNext(out)
}

// writeDisksNotUsed writes the disks no device class would use, LVM logical volumes and the
// kubelet's loop devices left out.
func (r *PlanReport) writeDisksNotUsed(out io.Writer) error {
	var disks []Disk
	var left leftOut
	for _, d := range r.DisksNotUsed {
		if !left.skip(d) {
			disks = append(disks, d)
		}
	}
	if len(disks) == 0 {
		if _, err := fmt.Fprintln(out, "\nDisks not used: none."); err != nil {
			return err
		}
		return left.write(out)
	}
	if _, err := fmt.Fprintln(out, "\nDisks not used:"); err != nil {
		return err
	}
	t := newTable(out, "NODE", "DEVICE", "CLASS", "REASONS")
	for _, d := range disks {
		t.row(d.Node, d.Device, orDash(strings.Join(d.ExcludedBy, ",")), orDash(strings.Join(d.Reasons, "; ")))
	}
	if err := t.flush(); err != nil {
		return err
	}
	return left.write(out)
}

// writeNext says what is still awaited, or how to apply the plan, and how to discard it.
func (r *PlanReport) writeNext(out io.Writer) error {
	var b strings.Builder
	if len(r.Waiting) > 0 {
		b.WriteString("\nStill waiting for:\n")
		for _, w := range r.Waiting {
			b.WriteString("  " + w + "\n")
		}
	}
	b.WriteString("\n")
	if len(r.Waiting) == 0 {
		_, _ = fmt.Fprintf(&b, "To apply this plan:  kubectl annotate lvmcluster %s -n %s %s-\n",
			r.Name, r.Namespace, lvmv1alpha1.DryRunAnnotation)
	}
	_, _ = fmt.Fprintf(&b, "To discard it:       kubectl delete lvmcluster %s -n %s\n", r.Name, r.Namespace)
	_, err := io.WriteString(out, b.String())
	return err
}
