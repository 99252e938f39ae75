package lvmcluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

func testNode(name string, mutate ...func(*corev1.Node)) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": "a"}}}
	for _, m := range mutate {
		m(&n)
	}
	return n
}

func TestSelectedNodes(t *testing.T) {
	notReady := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}
	}
	gpu := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	}
	prefer := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}
	}
	cordoned := func(n *corev1.Node) { n.Spec.Unschedulable = true }
	zoneB := func(n *corev1.Node) { n.Labels["zone"] = "b" }
	nodes := []corev1.Node{
		testNode("plain"), testNode("not-ready", notReady), testNode("gpu", gpu), testNode("soft", prefer),
		testNode("cordoned", cordoned), testNode("zone-b", zoneB),
	}
	zoneA := &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}},
		}}},
	}
	tests := []struct {
		name        string
		selector    *corev1.NodeSelector
		tolerations []corev1.Toleration
		want        string
	}{
		{"every schedulable untainted node", nil, nil, "plain,soft,zone-b"},
		{"node selector", zoneA, nil, "plain,soft"},
		{
			"tolerated taint",
			nil,
			[]corev1.Toleration{
				{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
			},
			"gpu,plain,soft,zone-b",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := &lvmv1alpha1.DeviceClass{Name: "vg1", NodeSelector: tt.selector}
			if got := strings.Join(selectedNodes(dc, tt.tolerations, nodes), ","); got != tt.want {
				t.Errorf("selected %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAggregate(t *testing.T) {
	cluster := &lvmv1alpha1.LVMCluster{Spec: lvmv1alpha1.LVMClusterSpec{Storage: lvmv1alpha1.Storage{
		DeviceClasses: []lvmv1alpha1.DeviceClass{{Name: "vg1"}, {Name: "vg2"}},
	}}}
	nodes := []corev1.Node{testNode("a"), testNode("b")}
	rep := func(node string, vgs ...lvmv1alpha1.VGStatus) lvmv1alpha1.LVMVolumeGroupNodeStatus {
		return lvmv1alpha1.LVMVolumeGroupNodeStatus{ObjectMeta: metav1.ObjectMeta{Name: node},
			Spec: lvmv1alpha1.LVMVolumeGroupNodeStatusSpec{LiveNodeStatus: vgs}}
	}
	vg := func(name string, st lvmv1alpha1.VGStatusType, reason string) lvmv1alpha1.VGStatus {
		return lvmv1alpha1.VGStatus{Name: name, Status: st, Reason: reason}
	}
	ready := lvmv1alpha1.VGStatusReady
	tests := []struct {
		name    string
		nodes   []corev1.Node
		reports []lvmv1alpha1.LVMVolumeGroupNodeStatus
		state   lvmv1alpha1.LVMStateType
		msg     string
	}{
		{
			"nothing reported",
			nodes,
			nil,
			lvmv1alpha1.LVMStatusProgressing,
			"node a, device class vg1: Progressing: waiting for the node agent",
		},
		{"all ready", nodes, []lvmv1alpha1.LVMVolumeGroupNodeStatus{
			rep("a", vg("vg1", ready, ""), vg("vg2", ready, "")), rep("b", vg("vg1", ready, ""), vg("vg2", ready, "")),
		}, lvmv1alpha1.LVMStatusReady, "4 volume group(s) Ready"},
		{"one class missing on one node", nodes, []lvmv1alpha1.LVMVolumeGroupNodeStatus{
			rep("a", vg("vg1", ready, ""), vg("vg2", ready, "")), rep("b", vg("vg1", ready, "")),
		}, lvmv1alpha1.LVMStatusProgressing, "node b, device class vg2"},
		{"failed beats degraded", nodes, []lvmv1alpha1.LVMVolumeGroupNodeStatus{
			rep("a", vg("vg1", lvmv1alpha1.VGStatusDegraded, "pool full"), vg("vg2", ready, "")),
			rep("b", vg("vg1", ready, ""), vg("vg2", lvmv1alpha1.VGStatusFailed, "no disks")),
		}, lvmv1alpha1.LVMStatusFailed, "node b, device class vg2: Failed: no disks"},
		{"degraded", nodes, []lvmv1alpha1.LVMVolumeGroupNodeStatus{
			rep("a", vg("vg1", lvmv1alpha1.VGStatusDegraded, "pool full"), vg("vg2", ready, "")),
			rep("b", vg("vg1", ready, ""), vg("vg2", ready, "")),
		}, lvmv1alpha1.LVMStatusDegraded, "node a, device class vg1: Degraded: pool full"},
		{"no nodes", nil, nil, lvmv1alpha1.LVMStatusProgressing, "no schedulable node"},
		{
			"reports of unselected nodes are ignored",
			nodes[:1],
			[]lvmv1alpha1.LVMVolumeGroupNodeStatus{
				rep(
					"a",
					vg("vg1", ready, ""),
					vg("vg2", ready, ""),
				),
				rep("gone", vg("vg1", lvmv1alpha1.VGStatusFailed, "x")),
			},
			lvmv1alpha1.LVMStatusReady,
			"2 volume group(s) Ready",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := aggregate(cluster, tt.nodes, tt.reports)
			if got.state != tt.state || !strings.Contains(got.condition.Message, tt.msg) {
				t.Errorf("state %s (%s), want %s containing %q", got.state, got.condition.Message, tt.state, tt.msg)
			}
			if (got.condition.Status == metav1.ConditionTrue) != (tt.state == lvmv1alpha1.LVMStatusReady) {
				t.Errorf("condition status %s with state %s", got.condition.Status, got.state)
			}
			if len(got.deviceClasses) != 2 {
				t.Fatalf("device class statuses: %+v", got.deviceClasses)
			}
		})
	}
}

func TestJoinCapped(t *testing.T) {
	msgs := make([]string, 12)
	for i := range msgs {
		msgs[i] = "x"
	}
	if got := joinCapped(msgs, 10); !strings.HasSuffix(got, "; and 2 more") {
		t.Errorf("got %q", got)
	}
}

func TestStorageClassDefaultAndOptions(t *testing.T) {
	c := &lvmv1alpha1.LVMCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	retain := corev1.PersistentVolumeReclaimRetain
	dc := &lvmv1alpha1.DeviceClass{Name: "vg1", FilesystemType: lvmv1alpha1.FilesystemTypeExt4,
		StorageClassOptions: &lvmv1alpha1.StorageClassOptions{ReclaimPolicy: &retain,
			AdditionalParameters: map[string]string{"x": "y"}, AdditionalLabels: map[string]string{"team": "a"}}}
	sc := storageClassFor(c, dc, false)
	if _, ok := sc.Annotations[AnnotationDefaultStorageClass]; ok {
		t.Error("marked default although markDefault=false")
	}
	if sc.Parameters[driver.ParamFSType] != "ext4" || sc.Parameters[driver.ParamDeviceClass] != "vg1" ||
		sc.Parameters["x"] != "y" {
		t.Errorf("parameters %v", sc.Parameters)
	}
	if *sc.ReclaimPolicy != retain || sc.Labels["team"] != "a" || sc.Labels[LabelOwnerName] != "c" {
		t.Errorf("reclaim %v labels %v", *sc.ReclaimPolicy, sc.Labels)
	}
	if sc := storageClassFor(c, dc, true); sc.Annotations[AnnotationDefaultStorageClass] != "true" {
		t.Error("not marked default")
	}
}

func TestNodeAffinityUnion(t *testing.T) {
	sel := func(v string) *corev1.NodeSelector {
		return &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{v}},
			}}},
		}
	}
	c := &lvmv1alpha1.LVMCluster{}
	c.Spec.Storage.DeviceClasses = []lvmv1alpha1.DeviceClass{
		{Name: "a", NodeSelector: sel("a")},
		{Name: "b", NodeSelector: sel("b")},
	}
	a := nodeAffinityFor(c)
	if a == nil || len(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) != 2 {
		t.Fatalf("want the union of two terms, got %+v", a)
	}
	c.Spec.Storage.DeviceClasses = append(c.Spec.Storage.DeviceClasses, lvmv1alpha1.DeviceClass{Name: "all"})
	if nodeAffinityFor(c) != nil {
		t.Error("a device class without selector selects every node: no affinity expected")
	}
}
