package placement

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// nodeFits compares every node's capacity for deviceClass with requested bytes.
func nodeFits(
	ctx context.Context, c client.Reader, operatorNamespace, deviceClass string, requested int64,
) ([]NodeFit, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("list Nodes: %w", err)
	}
	statuses, err := ListNodeStatuses(ctx, c, operatorNamespace)
	if err != nil {
		return nil, err
	}
	vgOf := map[string]*lvmv1alpha1.VGStatus{}
	for _, ns := range statuses {
		for i := range ns.Spec.LiveNodeStatus {
			if vg := &ns.Spec.LiveNodeStatus[i]; vg.Name == deviceClass {
				vgOf[ns.Name] = vg
			}
		}
	}
	out := make([]NodeFit, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		out = append(out, nodeFit(&n, vgOf[n.Name], deviceClass, requested))
	}
	slices.SortFunc(out, func(a, b NodeFit) int { return cmp.Compare(a.Node, b.Node) })
	return out, nil
}

// nodeFit judges one node: a volume group the node reports not Ready is not a candidate whatever its
// annotation says; otherwise the capacity annotation decides, by the fit check the scheduler
// extender uses (driver.NodeFit).
func nodeFit(n *corev1.Node, vg *lvmv1alpha1.VGStatus, deviceClass string, requested int64) NodeFit {
	f := NodeFit{Node: n.Name}
	if vg != nil {
		f.State, f.Reason = VGState(*vg), vg.Reason
	}
	fit, free, readErr := driver.NodeFit(n.Annotations, deviceClass, uint64(max(requested, 0)))
	if fit == driver.Fits || fit == driver.TooSmall {
		f.FreeBytes = ptr.To(int64(min(free, math.MaxInt64)))
	}
	switch {
	case vg != nil && f.State != string(lvmv1alpha1.VGStatusReady):
		f.Fit = FitNotReady
	case fit == driver.NoAnnotation && vg == nil:
		f.Fit = FitNotOnNode
	case fit == driver.NoAnnotation:
		f.Fit = FitUnknown
		f.Reason = fmt.Sprintf("annotation %s is missing", driver.CapacityAnnotation(deviceClass))
	case fit == driver.Malformed:
		f.Fit = FitUnknown
		f.Reason = readErr.Error()
	case fit == driver.Fits:
		f.Fit = FitFits
	default:
		f.Fit = FitTooSmall
	}
	return f
}

// ListNodeStatuses returns the LVMVolumeGroupNodeStatuses of namespace sorted by node name.
func ListNodeStatuses(
	ctx context.Context, c client.Reader, namespace string,
) ([]lvmv1alpha1.LVMVolumeGroupNodeStatus, error) {
	var list lvmv1alpha1.LVMVolumeGroupNodeStatusList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list LVMVolumeGroupNodeStatuses in %s: %w", namespace, err)
	}
	slices.SortFunc(list.Items, func(a, b lvmv1alpha1.LVMVolumeGroupNodeStatus) int {
		return cmp.Compare(a.Name, b.Name)
	})
	return list.Items, nil
}

// VGState is the state of a node's volume group; an entry without one is still Progressing.
func VGState(vg lvmv1alpha1.VGStatus) string {
	return string(cmp.Or(vg.Status, lvmv1alpha1.VGStatusProgressing))
}
