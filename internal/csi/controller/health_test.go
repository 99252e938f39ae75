package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// TestHealthOf: what each state of the node and of its volume groups makes of a volume's health.
func TestHealthOf(t *testing.T) {
	lv := func(class string) *topolvmv1.LogicalVolume {
		return &topolvmv1.LogicalVolume{
			Spec:   topolvmv1.LogicalVolumeSpec{NodeName: "n1", DeviceClass: class},
			Status: topolvmv1.LogicalVolumeStatus{VolumeID: "vol-1"},
		}
	}
	node := func(ready corev1.ConditionStatus) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
		if ready != "" {
			n.Status.Conditions = []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue},
				{Type: corev1.NodeReady, Status: ready, Reason: "NodeStatusUnknown", Message: "stopped posting"},
			}
		}
		return n
	}
	vgs := func(st ...lvmv1alpha1.VGStatus) *lvmv1alpha1.LVMVolumeGroupNodeStatus {
		return &lvmv1alpha1.LVMVolumeGroupNodeStatus{Spec: lvmv1alpha1.LVMVolumeGroupNodeStatusSpec{LiveNodeStatus: st}}
	}
	raid := &lvmv1alpha1.RAIDStatus{Status: lvmv1alpha1.RAIDDegraded, LVHealth: []lvmv1alpha1.RAIDLVHealth{
		{Name: "vol-0", RAIDType: "raid1", SyncPercent: 100, HealthStatus: "partial"},
		{Name: "vol-1", RAIDType: "raid1", SyncPercent: 40, HealthStatus: "refresh needed"},
	}}
	healthyRAID := &lvmv1alpha1.RAIDStatus{Status: lvmv1alpha1.RAIDHealthy, LVHealth: []lvmv1alpha1.RAIDLVHealth{
		{Name: "vol-1", RAIDType: "raid1", SyncPercent: 100},
	}}
	for _, tc := range []struct {
		name       string
		lv         *topolvmv1.LogicalVolume
		node       *corev1.Node
		nodeStatus *lvmv1alpha1.LVMVolumeGroupNodeStatus
		want       []string // status/reason
		message    string   // a part of the first entry's message
	}{
		{name: "node gone", lv: lv("thick"), want: []string{"INACCESSIBLE/NodeNotFound"},
			message: "node n1 does not exist"},
		{name: "node ready, no node status", lv: lv("thick"), node: node(corev1.ConditionTrue)},
		{name: "node without a Ready condition yet", lv: lv("thick"), node: node("")},
		{name: "node not ready", lv: lv("thick"), node: node(corev1.ConditionUnknown),
			want: []string{"INACCESSIBLE/NodeNotReady"}, message: "not Ready (NodeStatusUnknown): stopped posting"},
		{name: "volume group ready", lv: lv("thick"), node: node(corev1.ConditionTrue),
			nodeStatus: vgs(lvmv1alpha1.VGStatus{Name: "thick", Status: lvmv1alpha1.VGStatusReady})},
		{name: "volume group failed", lv: lv("thick"), node: node(corev1.ConditionTrue),
			nodeStatus: vgs(lvmv1alpha1.VGStatus{Name: "other", Status: lvmv1alpha1.VGStatusReady},
				lvmv1alpha1.VGStatus{Name: "thick", Status: lvmv1alpha1.VGStatusFailed, Reason: "disk gone"}),
			want: []string{"INACCESSIBLE/VolumeGroupFailed"}, message: "volume group thick on node n1 failed: disk gone"},
		{name: "another class degraded", lv: lv("thick"), node: node(corev1.ConditionTrue),
			nodeStatus: vgs(lvmv1alpha1.VGStatus{Name: "thin", Status: lvmv1alpha1.VGStatusDegraded})},
		{name: "volume group degraded, node not ready", lv: lv("thin"), node: node(corev1.ConditionFalse),
			nodeStatus: vgs(lvmv1alpha1.VGStatus{Name: "thin", Status: lvmv1alpha1.VGStatusDegraded,
				Reason: "thin pool 91% full"}),
			want: []string{"INACCESSIBLE/NodeNotReady", "DEGRADED/VolumeGroupDegraded"}},
		{name: "default class: the node resolves it", lv: lv(""), node: node(corev1.ConditionTrue),
			nodeStatus: vgs(lvmv1alpha1.VGStatus{Name: "thick", Status: lvmv1alpha1.VGStatusFailed})},
		{name: "its RAID LV unhealthy", lv: lv("mirror"), node: node(corev1.ConditionTrue),
			nodeStatus: vgs(lvmv1alpha1.VGStatus{Name: "mirror", Status: lvmv1alpha1.VGStatusDegraded, RAIDStatus: raid}),
			want:       []string{"DEGRADED/VolumeGroupDegraded", "DEGRADED/RAIDUnhealthy"}},
		{name: "its RAID LV healthy", lv: lv("mirror"), node: node(corev1.ConditionTrue),
			nodeStatus: vgs(lvmv1alpha1.VGStatus{Name: "mirror", Status: lvmv1alpha1.VGStatusReady, RAIDStatus: healthyRAID})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := healthOf(tc.lv, tc.node, tc.nodeStatus)
			var kinds []string
			for _, e := range got {
				kinds = append(kinds, e.GetStatus().String()+"/"+e.GetReason())
			}
			if !slices.Equal(kinds, tc.want) {
				t.Fatalf("got %v, want %v (%v)", kinds, tc.want, got)
			}
			if tc.message != "" && !strings.Contains(got[0].GetMessage(), tc.message) {
				t.Errorf("message %q, want it to say %q", got[0].GetMessage(), tc.message)
			}
		})
	}
	got := healthOf(lv("mirror"), node(corev1.ConditionTrue),
		vgs(lvmv1alpha1.VGStatus{Name: "mirror", Status: lvmv1alpha1.VGStatusReady, RAIDStatus: raid}))
	if len(got) != 1 || got[0].GetMessage() != "raid1 LV vol-1: refresh needed (in sync 40%)" {
		t.Errorf("RAID entry %v: want only vol-1's, with its state and sync", got)
	}
}

// TestVolumeHealthRPCs against the API server: a volume on a node that is not Ready and whose volume
// group failed, one on a node that does not exist, and a healthy one; GetVolumeHealth reports each,
// ListVolumeHealth lists only the unhealthy, a page at a time, and the capabilities say so.
func TestVolumeHealthRPCs(t *testing.T) {
	ctx := testCtx(t)
	const ns = "health"
	sick, gone, fine := uniqueName("node-sick"), uniqueName("node-gone"), uniqueName("node-fine")
	mustDo(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	for name, ready := range map[string]corev1.ConditionStatus{sick: corev1.ConditionFalse, fine: corev1.ConditionTrue} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		mustDo(t, k8s.Create(ctx, n))
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "KubeletDown",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		mustDo(t, k8s.Status().Update(ctx, n))
	}
	st := &lvmv1alpha1.LVMVolumeGroupNodeStatus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sick},
		Spec: lvmv1alpha1.LVMVolumeGroupNodeStatusSpec{LiveNodeStatus: []lvmv1alpha1.VGStatus{
			{Name: "thick", Status: lvmv1alpha1.VGStatusFailed, Reason: "a disk is missing"}}}}
	mustDo(t, k8s.Create(ctx, st))
	ids := map[string]string{}
	for _, node := range []string{sick, gone, fine} {
		ids[node] = makeVolume(t, node, "thick")
	}
	health := &Server{cache: reads, namespace: ns}
	want := map[string][]string{
		sick: {"INACCESSIBLE/NodeNotReady", "INACCESSIBLE/VolumeGroupFailed"},
		gone: {"INACCESSIBLE/NodeNotFound"},
		fine: nil,
	}
	// The cache sees the Nodes' and the node status's writes a moment later.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true,
		func(ctx context.Context) (bool, error) {
			for node, kinds := range want {
				resp, err := health.ControllerGetVolumeHealth(ctx,
					&csi.ControllerGetVolumeHealthRequest{VolumeId: ids[node]})
				if err != nil {
					return false, err
				}
				if !slices.Equal(healthKinds(resp.GetVolumeHealth()), kinds) {
					t.Logf("%s: %v, want %v", node, healthKinds(resp.GetVolumeHealth()), kinds)
					return false, nil
				}
			}
			return true, nil
		})
	mustDo(t, err)

	var listed []string
	for token := ""; ; {
		resp, err := health.ControllerListVolumeHealth(ctx,
			&csi.ControllerListVolumeHealthRequest{MaxEntries: 1, StartingToken: token})
		mustDo(t, err)
		if len(resp.GetEntries()) > 1 {
			t.Fatalf("page of %d entries with max_entries 1", len(resp.GetEntries()))
		}
		for _, e := range resp.GetEntries() {
			if len(e.GetHealthStatuses()) == 0 {
				t.Errorf("healthy volume %s listed", e.GetVolumeId())
			}
			listed = append(listed, e.GetVolumeId())
		}
		if token = resp.GetNextToken(); token == "" {
			break
		}
	}
	if !slices.Contains(listed, ids[sick]) || !slices.Contains(listed, ids[gone]) ||
		slices.Contains(listed, ids[fine]) {
		t.Errorf("listed %v: want %s and %s, not %s", listed, ids[sick], ids[gone], ids[fine])
	}
	_, err = health.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{VolumeId: "no-such-volume"})
	wantCode(t, err, codes.NotFound)
	_, err = health.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{})
	wantCode(t, err, codes.InvalidArgument)
	caps, err := srv.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	mustDo(t, err)
	var rpcs []csi.ControllerServiceCapability_RPC_Type
	for _, c := range caps.GetCapabilities() {
		rpcs = append(rpcs, c.GetRpc().GetType())
	}
	if !slices.Contains(rpcs, csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH) ||
		!slices.Contains(rpcs, csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH) {
		t.Errorf("capabilities %v lack the volume health RPCs", rpcs)
	}
}

// makeVolume creates a LogicalVolume on node and returns its volume ID once the fake node agent has
// set it.
func makeVolume(t *testing.T, node, class string) string {
	t.Helper()
	lv := &topolvmv1.LogicalVolume{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("health")},
		Spec: topolvmv1.LogicalVolumeSpec{Name: "pvc", NodeName: node, DeviceClass: class,
			Size: resource.MustParse("1Gi")}}
	mustDo(t, k8s.Create(testCtx(t), lv))
	var id string
	mustDo(t, wait.PollUntilContextTimeout(testCtx(t), 50*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			id = getLV(t, lv.Name).Status.VolumeID
			return id != "", nil
		}))
	// The service reads through its cache.
	mustDo(t, wait.PollUntilContextTimeout(testCtx(t), 50*time.Millisecond, 10*time.Second, true,
		func(ctx context.Context) (bool, error) {
			got, err := srv.getByVolumeID(ctx, id)
			return got != nil, err
		}))
	return id
}

func healthKinds(h *csi.VolumeHealth) []string {
	var out []string
	for _, e := range h.GetHealthStatuses() {
		out = append(out, e.GetStatus().String()+"/"+e.GetReason())
	}
	return out
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
