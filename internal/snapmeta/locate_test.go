package snapmeta

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

func TestKubeLocator(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := topolvmv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	lv := func(name, id, node string) client.Object {
		return &topolvmv1.LogicalVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:   topolvmv1.LogicalVolumeSpec{NodeName: node},
			Status: topolvmv1.LogicalVolumeStatus{VolumeID: id}}
	}
	agent := "lvms-node"
	pod := func(name, ns, node, ip string, phase corev1.PodPhase, app string) client.Object {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{NodeName: node},
			Status:     corev1.PodStatus{Phase: phase, PodIP: ip},
		}
	}
	c := fake.NewClientBuilder().WithScheme(s).WithIndex(&topolvmv1.LogicalVolume{}, IndexVolumeID, IndexVolumeIDFunc).
		WithObjects(
			lv("snap-a", "id-a", "node-a"), lv("snap-b", "id-b", "node-b"), lv("snap-c", "id-c", "node-c"),
			lv("twin-1", "dup", "node-a"), lv("twin-2", "dup", "node-a"),
			pod("agent-a", "lvms-system", "node-a", "10.0.0.1", corev1.PodRunning, agent),
			pod("other-app", "lvms-system", "node-b", "10.0.0.9", corev1.PodRunning, "something-else"),
			pod("agent-b-old", "lvms-system", "node-b", "", corev1.PodPending, agent),
			pod("agent-c-elsewhere", "default", "node-c", "10.0.0.3", corev1.PodRunning, agent),
		).Build()
	l := &KubeLocator{Client: c, Namespace: "lvms-system", PodLabels: map[string]string{"app": agent}, Port: 9809}
	for _, tc := range []struct {
		id, node, addr string
		code           codes.Code
	}{
		{id: "id-a", node: "node-a", addr: "10.0.0.1:9809"},
		{id: "id-b", code: codes.Unavailable}, // only a pending agent and another app's pod there
		{id: "id-c", code: codes.Unavailable}, // an agent pod in another namespace does not count
		{id: "missing", code: codes.NotFound},
		{id: "dup", code: codes.Internal},
	} {
		node, addr, err := l.Locate(t.Context(), tc.id)
		if status.Code(err) != tc.code || node != tc.node || addr != tc.addr {
			t.Errorf("Locate(%s) = %q, %q, %v; want %q, %q, code %v", tc.id, node, addr, err, tc.node, tc.addr, tc.code)
		}
	}
}
