package lvmcluster

import (
	"slices"
	"testing"
)

// The node agents learn the cluster identity they tag VGs and LVs with from the operator.
func TestNodeAgentGetsTheClusterID(t *testing.T) {
	pod := nodeDaemonSet(t, Options{Namespace: "lvms-system", NodeImage: "lvms", ClusterID: "0c1d-uid"}).Spec.Template
	if args := containerNamed(t, &pod.Spec, "node").Args; !slices.Contains(args, "--cluster-id=0c1d-uid") {
		t.Errorf("node agent args %q lack --cluster-id=0c1d-uid", args)
	}
}

// The operator's --profiling reaches the node agents, and without it they serve no profiles.
func TestNodeAgentProfiling(t *testing.T) {
	for _, on := range []bool{false, true} {
		opts := Options{Namespace: "lvms-system", NodeImage: "lvms", ClusterID: "0c1d-uid", Profiling: on}
		pod := nodeDaemonSet(t, opts).Spec.Template
		if args := containerNamed(t, &pod.Spec, "node").Args; slices.Contains(args, "--profiling") != on {
			t.Errorf("Profiling %v: node agent args %q", on, args)
		}
	}
}
