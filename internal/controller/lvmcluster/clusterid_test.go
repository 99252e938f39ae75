package lvmcluster

import (
	"slices"
	"strings"
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

// The operator's --zap-log-level reaches the node agents; without it they log at their default.
func TestNodeAgentLogLevel(t *testing.T) {
	for level, want := range map[string]string{"": "", "debug": "--zap-log-level=debug", "3": "--zap-log-level=3"} {
		opts := Options{Namespace: "lvms-system", NodeImage: "lvms", ClusterID: "0c1d-uid", LogLevel: level}
		args := containerNamed(t, &nodeDaemonSet(t, opts).Spec.Template.Spec, "node").Args
		got := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--zap-log-level") })
		switch {
		case want == "" && got >= 0:
			t.Errorf("no level: node agent args %q carry %s", args, args[got])
		case want != "" && (got < 0 || args[got] != want):
			t.Errorf("level %q: node agent args %q, want %s", level, args, want)
		}
	}
}

// The operator's TLS policy flags reach the node agents' metrics servers; without them none is set.
func TestNodeAgentTLSPolicy(t *testing.T) {
	for _, tlsArgs := range [][]string{nil, {"--tls-min-version=VersionTLS13"}} {
		opts := Options{Namespace: "lvms-system", NodeImage: "lvms", ClusterID: "0c1d-uid", TLSArgs: tlsArgs}
		args := containerNamed(t, &nodeDaemonSet(t, opts).Spec.Template.Spec, "node").Args
		got := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return !strings.HasPrefix(a, "--tls-") })
		if !slices.Equal(got, tlsArgs) {
			t.Errorf("TLSArgs %q: node agent args %q", tlsArgs, args)
		}
	}
}
