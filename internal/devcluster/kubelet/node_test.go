package kubelet

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
)

func TestRegisterNodeHeartbeatAndLease(t *testing.T) {
	tests := []struct {
		name     string
		existing []corev1.Node
	}{
		{name: "new node"},
		{name: "node left by a previous run, not ready", existing: []corev1.Node{{
			ObjectMeta: metav1.ObjectMeta{Name: testNode, Labels: map[string]string{"keep": "me"}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			client := fake.NewClientset()
			for i := range tt.existing {
				if _, err := client.CoreV1().Nodes().Create(ctx, &tt.existing[i], metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			k := New(Config{NodeName: testNode, Labels: map[string]string{"extra": "x"}}, Deps{Client: client, Clock: clk})
			if err := k.RegisterNode(ctx); err != nil {
				t.Fatal(err)
			}
			if err := k.RenewLease(ctx); err != nil {
				t.Fatal(err)
			}
			first := clk.Now()
			clk.Step(10 * time.Second)
			if err := k.UpdateNodeStatus(ctx); err != nil {
				t.Fatal(err)
			}
			if err := k.RenewLease(ctx); err != nil {
				t.Fatal(err)
			}
			node, err := client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for key, want := range map[string]string{corev1.LabelHostname: testNode, corev1.LabelOSStable: "linux",
				lvmcsi.TopologyNodeKey: testNode, "extra": "x"} {
				if node.Labels[key] != want {
					t.Errorf("label %s = %q, want %q", key, node.Labels[key], want)
				}
			}
			if len(tt.existing) > 0 && node.Labels["keep"] != "me" {
				t.Errorf("existing label lost: %v", node.Labels)
			}
			if node.Status.Allocatable.Pods().Value() != 110 || node.Status.Capacity.Cpu().Value() != 4 {
				t.Errorf("capacity = %v, allocatable = %v", node.Status.Capacity, node.Status.Allocatable)
			}
			want := map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionTrue,
				corev1.NodeMemoryPressure: corev1.ConditionFalse, corev1.NodeDiskPressure: corev1.ConditionFalse,
				corev1.NodePIDPressure: corev1.ConditionFalse}
			for _, c := range node.Status.Conditions {
				if want[c.Type] != c.Status {
					t.Errorf("condition %s = %s, want %s", c.Type, c.Status, want[c.Type])
				}
				delete(want, c.Type)
				if !c.LastHeartbeatTime.Time.Equal(clk.Now()) {
					t.Errorf("condition %s heartbeat %v, want %v", c.Type, c.LastHeartbeatTime, clk.Now())
				}
				if !c.LastTransitionTime.Time.Equal(first) {
					t.Errorf("condition %s transition %v, want the first report %v", c.Type, c.LastTransitionTime, first)
				}
			}
			if len(want) > 0 {
				t.Errorf("missing conditions %v", want)
			}
			lease, err := client.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, testNode, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if *lease.Spec.HolderIdentity != testNode || !lease.Spec.RenewTime.Time.Equal(clk.Now()) ||
				*lease.Spec.LeaseDurationSeconds != leaseDurationSeconds {
				t.Errorf("lease spec = %+v, want renewed at %v", lease.Spec, clk.Now())
			}
			if len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].Kind != "Node" {
				t.Errorf("lease owners = %v, want the Node", lease.OwnerReferences)
			}
		})
	}
}

func TestWriteCSINode(t *testing.T) {
	tests := []struct {
		name    string
		other   bool
		wantLen int
	}{
		{name: "new CSINode", wantLen: 1},
		{name: "another driver is kept", other: true, wantLen: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			client := fake.NewClientset()
			if tt.other {
				_, err := client.StorageV1().CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: testNode},
					Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "other.csi", NodeID: "x"}}}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
			}
			k := New(Config{NodeName: testNode}, Deps{Client: client, CSI: startCSI(t, &fakeNodeServer{})})
			if err := k.RegisterNode(ctx); err != nil {
				t.Fatal(err)
			}
			if err := k.WriteCSINode(ctx); err != nil {
				t.Fatal(err)
			}
			cn, err := client.StorageV1().CSINodes().Get(ctx, testNode, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(cn.Spec.Drivers) != tt.wantLen {
				t.Fatalf("drivers = %+v, want %d", cn.Spec.Drivers, tt.wantLen)
			}
			d := cn.Spec.Drivers[0]
			if d.Name != lvmcsi.DriverName || d.NodeID != testNode || len(d.TopologyKeys) != 1 || d.TopologyKeys[0] != lvmcsi.TopologyNodeKey {
				t.Errorf("driver = %+v", d)
			}
			node, err := client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := node.Annotations[NodeIDAnnotation]; got != `{"topolvm.io":"node1"}` {
				t.Errorf("node ID annotation = %s", got)
			}
		})
	}
}
