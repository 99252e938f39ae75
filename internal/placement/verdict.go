package placement

import (
	"fmt"
	"strings"

	storagev1 "k8s.io/api/storage/v1"

	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// maxListedNodes bounds how many node names a verdict lists.
const maxListedNodes = 3

// verdict sums the report up in one sentence.
func (r *Report) verdict() string {
	if b := r.Bound; b != nil {
		if b.Driver != driver.Name {
			return fmt.Sprintf("the claim is Bound to %s, a volume of %s, not of lvms", b.PersistentVolume,
				orDash(b.Driver))
		}
		return fmt.Sprintf("the claim is Bound: its data is on node %s in device class %s",
			orDash(b.Node), orDash(b.DeviceClass))
	}
	if r.StorageClassProblem != "" {
		return r.StorageClassProblem
	}
	var fits []string
	var largest *NodeFit
	notReady := false
	for i, n := range r.Nodes {
		switch n.Fit {
		case FitFits:
			fits = append(fits, n.Node)
		case FitTooSmall:
			if largest == nil || *n.FreeBytes > *largest.FreeBytes {
				largest = &r.Nodes[i]
			}
		case FitNotReady:
			notReady = true
		}
	}
	dc := r.DeviceClass
	switch {
	case len(fits) == 0 && largest != nil:
		req, free := formatBytesPair(r.RequestedBytes, *largest.FreeBytes)
		return fmt.Sprintf("no node has %s free in device class %s: the largest is %s on %s",
			req, dc, free, largest.Node)
	case len(fits) == 0 && notReady:
		return fmt.Sprintf("device class %s is not Ready on any node that has it: kubectl lvms status says why", dc)
	case len(fits) == 0:
		return fmt.Sprintf("no node has device class %s: check its nodeSelector in the LVMCluster and "+
			"kubectl lvms status", dc)
	}
	where := listNames(fits)
	if r.SelectedNode != "" {
		return r.selectedVerdict(where)
	}
	if r.VolumeBindingMode == string(storagev1.VolumeBindingWaitForFirstConsumer) {
		return fmt.Sprintf("it fits on %s: the claim waits for a pod that uses it to be scheduled "+
			"(volumeBindingMode WaitForFirstConsumer)", where)
	}
	return fmt.Sprintf("it fits on %s: the events tell why it is not provisioned yet", where)
}

// selectedVerdict is the verdict when some node fits and the scheduler already chose one.
func (r *Report) selectedVerdict(where string) string {
	for _, n := range r.Nodes {
		if n.Node != r.SelectedNode {
			continue
		}
		if n.Fit == FitFits {
			return fmt.Sprintf("it fits on the selected node %s: the volume is being provisioned there, "+
				"or provisioning fails (see the events)", n.Node)
		}
		return fmt.Sprintf("the scheduler selected node %s, where %s; it would fit on %s",
			n.Node, n.Describe(r.DeviceClass, r.RequestedBytes), where)
	}
	return fmt.Sprintf("the scheduler selected node %s, which is no longer a node of the cluster; "+
		"it would fit on %s", r.SelectedNode, where)
}

// listNames joins names, naming at most maxListedNodes of them.
func listNames(names []string) string {
	if len(names) <= maxListedNodes {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxListedNodes], ", "), len(names)-maxListedNodes)
}

// Describe says what the node's device class means for a request of requested bytes, as kubectl lvms
// why lists it.
func (f NodeFit) Describe(deviceClass string, requested int64) string {
	switch f.Fit {
	case FitFits:
		return fmt.Sprintf("device class %s has %s free: fits", deviceClass, FormatBytes(*f.FreeBytes))
	case FitTooSmall:
		free, req := formatBytesPair(*f.FreeBytes, requested)
		return fmt.Sprintf("device class %s has %s free, %s requested: does not fit", deviceClass, free, req)
	case FitNotOnNode:
		return fmt.Sprintf("device class %s is not on this node", deviceClass)
	case FitNotReady:
		return fmt.Sprintf("device class %s is %s: %s", deviceClass, f.State, orDash(f.Reason))
	default:
		return fmt.Sprintf("device class %s has no known free capacity: %s", deviceClass, f.Reason)
	}
}

// orDash returns s, or "-" for an empty value.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
