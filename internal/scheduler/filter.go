package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/lvm-operator/lvm-operator/internal/csi"
)

// podRequests returns the bytes the pod asks for per device-class key, from its annotations
// capacity.topolvm.io/<key> (decimal bytes). An annotation with an empty key, or a value that is
// not a non-negative integer, asks for nothing, as in TopoLVM: the pod is then placed without that
// check rather than never.
func podRequests(pod *corev1.Pod) map[string]int64 {
	requests := map[string]int64{}
	for k, v := range pod.Annotations {
		dc, ok := strings.CutPrefix(k, csi.CapacityAnnotationPrefix)
		if !ok || dc == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			continue
		}
		requests[dc] = n
	}
	return requests
}

// requestedClasses returns the device-class keys of the pod's capacity annotations, sorted.
func requestedClasses(pod *corev1.Pod) []string {
	var classes []string
	for k := range pod.Annotations {
		if dc, ok := strings.CutPrefix(k, csi.CapacityAnnotationPrefix); ok && dc != "" {
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
func filterNodes(nodes []corev1.Node, requests map[string]int64) extenderv1.ExtenderFilterResult {
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
// class that does not fit, in the order of classes. The reasons name no node or size: the
// scheduler counts nodes per reason in the pod's FailedScheduling event.
func nodeFailure(node *corev1.Node, requests map[string]int64, classes []string) string {
	var reasons []string
	for _, dc := range classes {
		key := csi.CapacityAnnotationPrefix + dc
		v, ok := node.Annotations[key]
		if !ok {
			reasons = append(reasons, "no capacity annotation "+key)
			continue
		}
		free, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("bad capacity annotation %s: %q", key, v))
			continue
		}
		if free < uint64(requests[dc]) { // podRequests keeps non-negative values only
			reasons = append(reasons, "out of VG free space for device class "+dc)
		}
	}
	return strings.Join(reasons, "; ")
}
