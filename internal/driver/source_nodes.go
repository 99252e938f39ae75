package driver

import (
	"slices"
	"strings"
)

// AnnotationSourceNodes is the Pod annotation the pod webhook writes for the scheduler extender:
// the nodes holding the data sources (a VolumeSnapshot's or a cloned claim's volume) of the pod's
// unbound topolvm.io claims, sorted, comma-separated. A restore or clone on one of these nodes is
// local; elsewhere it is a copy over the network or, for a clone, not possible.
const AnnotationSourceNodes = "lvms.topolvm.io/source-nodes"

// FormatSourceNodes is the annotation value of nodes: distinct, sorted, comma-separated; "" for
// none.
func FormatSourceNodes(nodes []string) string {
	out := slices.Clone(nodes)
	out = slices.DeleteFunc(out, func(n string) bool { return n == "" })
	slices.Sort(out)
	return strings.Join(slices.Compact(out), ",")
}

// SourceNodes reads the nodes of a Pod's AnnotationSourceNodes: none without it; empty elements
// and spaces around names are dropped.
func SourceNodes(annotations map[string]string) []string {
	v := annotations[AnnotationSourceNodes]
	if v == "" {
		return nil
	}
	var nodes []string
	for n := range strings.SplitSeq(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			nodes = append(nodes, n)
		}
	}
	return nodes
}
