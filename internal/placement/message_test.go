package placement

import (
	"cmp"
	"fmt"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
)

// nodeFit builders for the message tests.
func tooSmall(node string, free int64) NodeFit {
	return NodeFit{Node: node, Fit: FitTooSmall, FreeBytes: ptr.To(free), State: "Ready"}
}

func notReady(node, state, reason string) NodeFit {
	return NodeFit{Node: node, Fit: FitNotReady, State: state, Reason: reason}
}

func notOnNode(node string) NodeFit { return NodeFit{Node: node, Fit: FitNotOnNode} }

// TestCapacityMessage checks the event note a user reads on a claim no node can hold.
func TestCapacityMessage(t *testing.T) {
	const gi = int64(1) << 30
	head := "no node can hold 10Gi (10737418240 bytes) of device class thin: "
	abc := []NodeFit{tooSmall("c", 3*gi), tooSmall("a", 5*gi), tooSmall("b", 4*gi)}
	cases := []struct {
		name  string
		r     Report
		limit int
		want  string
	}{
		{
			name: "one node of each kind, closest first",
			r: Report{DeviceClass: "thick", RequestedBytes: 100 * gi, Nodes: []NodeFit{
				notOnNode("control-plane"),
				tooSmall("node-0", 17041457152),
				notReady("node-1", "Degraded", "/dev/vdd: device not found"),
			}},
			want: "no node can hold 100Gi (107374182400 bytes) of device class thick: " +
				"node-0: 15.9Gi (17041457152 bytes) free; " +
				"node-1: device class thick is Degraded: /dev/vdd: device not found; " +
				"control-plane: device class thick is not on this node",
		},
		{
			name: "most free first, then unknown capacity, not Ready, absent; by name within each",
			r: Report{Nodes: []NodeFit{
				notOnNode("z"), notOnNode("y"), notReady("x", "Progressing", ""),
				{Node: "w", Fit: FitUnknown, Reason: "annotation capacity.topolvm.io/thin is missing"},
				tooSmall("v", 1*gi), tooSmall("u", 0), tooSmall("t", 1*gi),
			}},
			want: head + "t: 1Gi (1073741824 bytes) free; v: 1Gi (1073741824 bytes) free; u: 0 bytes free; " +
				"w: device class thin has no known free capacity: annotation capacity.topolvm.io/thin is missing; " +
				"x: device class thin is Progressing; y: device class thin is not on this node; " +
				"z: device class thin is not on this node",
		},
		{name: "no nodes", want: head + "the cluster has no nodes"},
		{
			name:  "all nodes within the limit",
			r:     Report{Nodes: abc},
			limit: 158,
			want:  head + "a: 5Gi (5368709120 bytes) free; b: 4Gi (4294967296 bytes) free; c: 3Gi (3221225472 bytes) free",
		},
		{name: "one node over the limit", r: Report{Nodes: abc}, limit: 157,
			want: head + "a: 5Gi (5368709120 bytes) free; b: 4Gi (4294967296 bytes) free; and 1 more node"},
		{name: "room for the count only", r: Report{Nodes: abc}, limit: 142,
			want: head + "a: 5Gi (5368709120 bytes) free; and 2 more nodes"},
		{name: "limit below the head", r: Report{Nodes: abc}, limit: 30,
			want: "no node can hold 10Gi (1073..."},
		{name: "a long reason is cut", r: Report{Nodes: []NodeFit{notReady("n", "Failed", strings.Repeat("é", 150))}},
			want: head + "n: device class thin is Failed: " + strings.Repeat("é", 98) + "..."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			if r.DeviceClass == "" {
				r.DeviceClass, r.RequestedBytes = "thin", 10*gi
			}
			limit := cmp.Or(tc.limit, MaxMessageBytes)
			got := capacityMessage(&r, limit)
			if got != tc.want {
				t.Errorf("message\n got %q\nwant %q", got, tc.want)
			}
			if len(got) > limit {
				t.Errorf("message is %d bytes, over the limit of %d", len(got), limit)
			}
		})
	}
}

// TestCapacityMessageManyNodes checks that a large cluster's message stays within what the API
// server accepts and counts the nodes it leaves out.
func TestCapacityMessageManyNodes(t *testing.T) {
	r := &Report{DeviceClass: "thin", RequestedBytes: 1 << 40}
	for i := range 200 {
		r.Nodes = append(r.Nodes, tooSmall(fmt.Sprintf("worker-%03d", i), int64(i)<<30))
	}
	got := CapacityMessage(r)
	if len(got) > MaxMessageBytes {
		t.Fatalf("message is %d bytes, over %d", len(got), MaxMessageBytes)
	}
	listed := strings.Count(got, " free")
	want := fmt.Sprintf("; and %d more nodes", 200-listed)
	if !strings.HasSuffix(got, want) {
		t.Errorf("message %q does not end with %q", got, want)
	}
	if !strings.Contains(got, ": worker-199: 199Gi (213674622976 bytes) free; worker-198: ") {
		t.Errorf("message %q does not start with the nodes that have the most free", got)
	}
	if MaxMessageBytes-len(got) > len("; worker-000: 999Gi (1072668082176 bytes) free") {
		t.Errorf("message %q leaves room for another node", got)
	}
}

// TestNoNodeFits checks when a report calls for the NotEnoughCapacity event.
func TestNoNodeFits(t *testing.T) {
	fits := NodeFit{Node: "b", Fit: FitFits, FreeBytes: ptr.To(int64(20 << 30))}
	cases := []struct {
		name string
		r    Report
		want bool
	}{
		{"every node too small", Report{DeviceClass: "thin", Nodes: []NodeFit{tooSmall("a", 1)}}, true},
		{
			"not Ready or absent",
			Report{DeviceClass: "thin", Nodes: []NodeFit{notOnNode("a"), notReady("b", "Failed", "")}},
			true,
		},
		{"one node fits", Report{DeviceClass: "thin", Nodes: []NodeFit{tooSmall("a", 1), fits}}, false},
		{"no nodes", Report{DeviceClass: "thin"}, true},
		{"StorageClass problem", Report{StorageClassProblem: "StorageClass x does not exist"}, false},
		{"bound", Report{DeviceClass: "thin", Bound: &BoundVolume{PersistentVolume: "pv"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.NoNodeFits(); got != tc.want {
				t.Errorf("NoNodeFits = %t, want %t", got, tc.want)
			}
		})
	}
}
