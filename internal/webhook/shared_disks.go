package webhook

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// sharedDisk is one disk listed by two device classes whose nodeSelectors differ but both select node.
type sharedDisk struct {
	first, second, path, node string
}

// checkSharedDisks refuses a disk listed by two device classes that both select an existing node.
// Classes with equal nodeSelectors are refused by the schema already; this covers different
// selectors that overlap on today's nodes (upstream LVMS accepts those). On update only conflicts the
// old object did not have count, so an LVMCluster is never stuck because a node was labelled later.
// Nodes that appear later are guarded by the node agent, which never uses or wipes a disk of another
// lvms volume group.
func (v *LVMClusterValidator) checkSharedDisks(ctx context.Context, old, c *lvmv1alpha1.LVMCluster) error {
	pairs := candidatePairs(c)
	if len(pairs) == 0 {
		return nil
	}
	var nodes corev1.NodeList
	if err := v.reader.List(ctx, &nodes); err != nil {
		return fmt.Errorf("list nodes to check disks shared by device classes: %w", err)
	}
	before := map[sharedDisk]bool{}
	if old != nil {
		for _, d := range sharedDisks(candidatePairs(old), nodes.Items) {
			before[d] = true
		}
	}
	for _, d := range sharedDisks(pairs, nodes.Items) {
		if before[d] {
			continue
		}
		return fmt.Errorf("spec.storage.deviceClasses: device classes %s and %s both list %s and both select node %s: "+
			"a disk can belong to one volume group per node, list it in one of them only or make their nodeSelectors disjoint",
			d.first, d.second, d.path, d.node)
	}
	return nil
}

// classPair is two device classes with different nodeSelectors and the disks both list.
type classPair struct {
	a, b  *lvmv1alpha1.DeviceClass
	paths []string
}

func candidatePairs(c *lvmv1alpha1.LVMCluster) []classPair {
	dcs := c.Spec.Storage.DeviceClasses
	var out []classPair
	for i := range dcs {
		for j := i + 1; j < len(dcs); j++ {
			a, b := &dcs[i], &dcs[j]
			common := commonPaths(a.DeviceSelector, b.DeviceSelector)
			if len(common) > 0 && !equality.Semantic.DeepEqual(a.NodeSelector, b.NodeSelector) {
				out = append(out, classPair{a: a, b: b, paths: common})
			}
		}
	}
	return out
}

func sharedDisks(pairs []classPair, nodes []corev1.Node) []sharedDisk {
	var out []sharedDisk
	for _, p := range pairs {
		for i := range nodes {
			if !selects(p.a.NodeSelector, &nodes[i]) || !selects(p.b.NodeSelector, &nodes[i]) {
				continue
			}
			for _, path := range p.paths {
				out = append(out, sharedDisk{first: p.a.Name, second: p.b.Name, path: path, node: nodes[i].Name})
			}
		}
	}
	return out
}

// selects reports whether the device class nodeSelector (nil: every node) selects node. A selector
// the scheduler could not evaluate selects nothing, as for the node agent.
func selects(sel *corev1.NodeSelector, node *corev1.Node) bool {
	if sel == nil {
		return true
	}
	ok, err := nodeaffinity.NewLazyErrorNodeSelector(sel).Match(node)
	return err == nil && ok
}

func commonPaths(a, b *lvmv1alpha1.DeviceSelector) []string {
	if a == nil || b == nil {
		return nil
	}
	inB := append(slices.Clone(b.Paths), b.OptionalPaths...)
	var out []string
	for _, p := range append(slices.Clone(a.Paths), a.OptionalPaths...) {
		if slices.Contains(inB, p) {
			out = append(out, string(p))
		}
	}
	return out
}
