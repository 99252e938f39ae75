package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// podRequests returns the bytes the pod asks for per device-class key, from its annotations
// capacity.topolvm.io/<key> (driver.Requests).
func podRequests(pod *corev1.Pod) map[string]uint64 { return driver.Requests(pod.Annotations) }

// requestedClasses returns the device-class keys of the pod's capacity annotations, sorted.
func requestedClasses(pod *corev1.Pod) []string {
	var classes []string
	for k := range pod.Annotations {
		if dc, ok := strings.CutPrefix(k, driver.CapacityAnnotationPrefix); ok && dc != "" {
			classes = append(classes, dc)
		}
	}
	slices.Sort(classes)
	return classes
}

// filterNodes keeps the nodes with room for every request. A pod without requests fits everywhere.
//
// The nodes that fail are reported as unresolvable (TopoLVM reports them as failed): evicting pods
// frees no space in a volume group, so the scheduler must not preempt on them for this pod.
func filterNodes(nodes []corev1.Node, requests map[string]uint64) extenderv1.ExtenderFilterResult {
	passed := &corev1.NodeList{Items: []corev1.Node{}}
	if len(requests) == 0 {
		passed.Items = append(passed.Items, nodes...)
		return extenderv1.ExtenderFilterResult{Nodes: passed}
	}
	classes := slices.Sorted(maps.Keys(requests))
	failed := extenderv1.FailedNodesMap{}
	for i := range nodes {
		if reason := nodeFailure(&nodes[i], requests, classes); reason != "" {
			failed[nodes[i].Name] = reason
			continue
		}
		passed.Items = append(passed.Items, nodes[i])
	}
	return extenderv1.ExtenderFilterResult{Nodes: passed, FailedAndUnresolvableNodes: failed}
}

// nodeFailure returns why the node cannot hold the requests ("" if it can), one reason per device
// class that does not fit (driver.NodeFit), in the order of classes. The reasons name no node or
// size: the scheduler counts nodes per reason in the pod's FailedScheduling event.
func nodeFailure(node *corev1.Node, requests map[string]uint64, classes []string) string {
	var reasons []string
	for _, dc := range classes {
		key := driver.CapacityAnnotationPrefix + dc
		switch fit, _, _ := driver.NodeFit(node.Annotations, dc, requests[dc]); fit {
		case driver.NoAnnotation:
			reasons = append(reasons, "no capacity annotation "+key)
		case driver.Malformed:
			reasons = append(reasons, fmt.Sprintf("bad capacity annotation %s: %q", key, node.Annotations[key]))
		case driver.TooSmall:
			reasons = append(reasons, "out of VG free space for device class "+dc)
		}
	}
	return strings.Join(reasons, "; ")
}
