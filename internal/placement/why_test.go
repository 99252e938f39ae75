package placement

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// TestNodeFit covers the node verdicts the fixture cluster does not reach.
func TestNodeFit(t *testing.T) {
	const gi = int64(1) << 30
	ready := &lvmv1alpha1.VGStatus{Name: "thin", Status: lvmv1alpha1.VGStatusReady}
	cases := []struct {
		name       string
		annotation string // "" for none
		vg         *lvmv1alpha1.VGStatus
		want       Fit
		line       string
	}{
		{"fits exactly", "10737418240", ready, FitFits, "device class thin has 10Gi free: fits"},
		{"rounding hides the gap", "10694443008", ready, FitTooSmall,
			"has 10Gi (10694443008 bytes) free, 10Gi (10737418240 bytes) requested: does not fit"},
		{
			"not reported yet",
			"",
			&lvmv1alpha1.VGStatus{Name: "thin"},
			FitNotReady,
			"device class thin is Progressing: -",
		},
		{"annotation missing", "", ready, FitUnknown, "annotation capacity.topolvm.io/thin is missing"},
		{"annotation garbage", "lots", ready, FitUnknown, `annotation capacity.topolvm.io/thin is "lots"`},
		{"annotation without status", "21474836480", nil, FitFits, "has 20Gi free: fits"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
			if tc.annotation != "" {
				n.Annotations = map[string]string{"capacity.topolvm.io/thin": tc.annotation}
			}
			f := nodeFit(n, tc.vg, "thin", 10*gi)
			if f.Fit != tc.want {
				t.Errorf("fit = %s, want %s", f.Fit, tc.want)
			}
			if line := f.Describe("thin", 10*gi); !strings.Contains(line, tc.line) {
				t.Errorf("line %q does not contain %q", line, tc.line)
			}
		})
	}
}

// TestWhyVerdict covers the verdicts of a claim that fits somewhere, or nowhere for other reasons
// than size.
func TestWhyVerdict(t *testing.T) {
	fit := func(node string, f Fit, free int64) NodeFit {
		return NodeFit{Node: node, Fit: f, FreeBytes: ptr.To(free)}
	}
	nodes := []NodeFit{fit("a", FitTooSmall, 1<<30), fit("b", FitFits, 20<<30)}
	cases := []struct {
		name string
		r    Report
		want string
	}{
		{"selected node fits", Report{SelectedNode: "b", Nodes: nodes},
			"it fits on the selected node b: the volume is being provisioned there"},
		{"selected node too small", Report{SelectedNode: "a", Nodes: nodes},
			"the scheduler selected node a, where device class thin has 1Gi free, 10Gi requested: does not fit; " +
				"it would fit on b"},
		{"selected node gone", Report{SelectedNode: "z", Nodes: nodes},
			"the scheduler selected node z, which is no longer a node of the cluster; it would fit on b"},
		{"immediate binding", Report{VolumeBindingMode: "Immediate", Nodes: nodes},
			"it fits on b: the events tell why"},
		{"only not ready", Report{Nodes: []NodeFit{{Node: "a", Fit: FitNotReady}}},
			"device class thin is not Ready on any node that has it"},
		{"nowhere", Report{Nodes: []NodeFit{{Node: "a", Fit: FitNotOnNode}}}, "no node has device class thin"},
		{"many fit", Report{Nodes: []NodeFit{
			fit(
				"a",
				FitFits,
				0,
			),
			fit("b", FitFits, 0),
			fit("c", FitFits, 0),
			fit("d", FitFits, 0),
			fit("e", FitFits, 0),
		}}, "it fits on a, b, c and 2 more: the events"},
		{"other driver", Report{Bound: &BoundVolume{PersistentVolume: "pv", Driver: "nfs.csi.k8s.io"}},
			"the claim is Bound to pv, a volume of nfs.csi.k8s.io, not of lvms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			r.DeviceClass, r.RequestedBytes = "thin", 10<<30
			if got := r.verdict(); !strings.Contains(got, tc.want) {
				t.Errorf("verdict %q does not contain %q", got, tc.want)
			}
		})
	}
}
