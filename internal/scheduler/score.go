package scheduler

import (
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// scoreNodes scores every node for the requested device classes and the nodes holding the pod's
// data sources (sources, from driver.AnnotationSourceNodes). A pod with neither gets no scores (an
// empty list), as in TopoLVM.
func (h *Handler) scoreNodes(nodes []corev1.Node, classes, sources []string) extenderv1.HostPriorityList {
	scores := extenderv1.HostPriorityList{}
	if len(classes) == 0 && len(sources) == 0 {
		return scores
	}
	for i := range nodes {
		score := h.nodeScore(&nodes[i], classes)
		if len(sources) > 0 {
			score = sourceScore(score, slices.Contains(sources, nodes[i].Name))
		}
		scores = append(scores, extenderv1.HostPriority{Host: nodes[i].Name, Score: score})
	}
	return scores
}

// sourceScore is the score of a node for a pod whose claims restore or clone data sources: the
// maximum on a node holding one (the restore is local there: a thin snapshot or a local copy,
// where another node needs a full copy over the network, and a clone can only be made there);
// elsewhere half the capacity score, rounded up. Halving keeps the capacity order among the
// other nodes while leaving a source's node at least 5 ahead: with their plain scores a node with
// 1 TiB free (10 with divisor 1) would tie with it, and no extender weight breaks a tie.
func sourceScore(capacity int64, holdsSource bool) int64 {
	if holdsSource {
		return extenderv1.MaxExtenderPriority
	}
	return (capacity + 1) / 2
}

// nodeScore is the lowest score of the node's requested classes: a node is as good as its fullest
// class. Classes without a capacity annotation on the node do not count (the filter has removed
// the node already); with none the score is 0. An unreadable annotation counts as no free space.
func (h *Handler) nodeScore(node *corev1.Node, classes []string) int64 {
	score := int64(-1)
	for _, dc := range classes {
		free, present, _ := driver.FreeBytes(node.Annotations, dc)
		if !present {
			continue
		}
		if s := capacityScore(free, h.divisor(dc)); score < 0 || s < score {
			score = s
		}
	}
	return max(score, extenderv1.MinExtenderPriority)
}

func (h *Handler) divisor(dc string) float64 {
	if d, ok := h.divisors[dc]; ok {
		return d
	}
	return h.defaultDivisor
}

// capacityScore is TopoLVM's score of free bytes: log2 of the whole free GiB divided by the
// divisor, truncated and clamped to 1..10; less than 1 GiB scores 1, nothing free 0.
func capacityScore(free uint64, divisor float64) int64 {
	gib := free >> 30
	if gib == 0 {
		if free > 0 {
			return 1
		}
		return extenderv1.MinExtenderPriority
	}
	s := math.Log2(float64(gib) / divisor)
	switch {
	case !(s >= 1): // also NaN
		return 1
	case s >= float64(extenderv1.MaxExtenderPriority):
		return extenderv1.MaxExtenderPriority
	default:
		return int64(s)
	}
}
