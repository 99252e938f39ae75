package transfertoken

import (
	"crypto/ed25519"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoapplyconfigurations "k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	topolvmapply "github.com/lvm-operator/lvm-operator/api/topolvm/v1/applyconfiguration"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

var agentLabels = map[string]string{"app.kubernetes.io/name": "lvms-node"}

func agentPod(name, node, ip string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "lvms-system", Labels: agentLabels},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase, PodIP: ip},
	}
}

// restore is a LogicalVolume on node-a copying snapshot snap-1 from node-b, at attempt.
func restore(attempt, tokenAttempt int32, phase topolvmv1.TransferPhase) *topolvmv1.LogicalVolume {
	return &topolvmv1.LogicalVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-1", UID: "uid-1",
			Annotations: map[string]string{driver.AnnotationClaim: "default/data"}},
		Spec: topolvmv1.LogicalVolumeSpec{Name: "pvc-1", NodeName: "node-a", SourceNode: "node-b",
			Source: "snap-1", DeviceClass: "thin", AccessType: topolvmv1.AccessTypeReadWrite,
			Size: *resource.NewQuantity(1<<30, resource.BinarySI)},
		Status: topolvmv1.LogicalVolumeStatus{Transfer: &topolvmv1.TransferStatus{
			Attempt: attempt, TokenAttempt: tokenAttempt, Phase: phase, Message: "attempt 1: reset"}},
	}
}

type recorded struct{ reasons []string }

func (r *recorded) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	r.reasons = append(r.reasons, reason)
}

var _ events.EventRecorder = (*recorded)(nil)

func newReconciler(t *testing.T, now time.Time, objs ...client.Object) (*Reconciler, client.Client,
	ed25519.PublicKey, *recorded) {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := topolvmv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}}
	c := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&topolvmv1.LogicalVolume{}).
		WithTypeConverters(clientgoapplyconfigurations.NewTypeConverter(s), topolvmapply.NewTypeConverter(s)).
		WithObjects(append(objs, pvc)...).Build()
	pub, priv, _ := ed25519.GenerateKey(nil)
	rec := &recorded{}
	r, err := New(Options{Client: c, Reader: c, Recorder: rec, Key: priv, Namespace: "lvms-system",
		AgentLabels: agentLabels, Port: 9830, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return r, c, pub, rec
}

func reconcileLV(t *testing.T, r *Reconciler) ctrl.Result {
	t.Helper()
	res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "pvc-1"}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestIssuesTheTokenOfTheAttempt(t *testing.T) {
	now := time.Now()
	r, c, pub, rec := newReconciler(t, now, restore(2, 1, topolvmv1.TransferWaiting),
		agentPod("agent-a", "node-a", "10.244.1.5", corev1.PodRunning),
		agentPod("agent-b-old", "node-b", "10.244.2.4", corev1.PodFailed),
		agentPod("agent-b", "node-b", "10.244.2.7", corev1.PodRunning))
	reconcileLV(t, r)
	lv := &topolvmv1.LogicalVolume{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: "pvc-1"}, lv); err != nil {
		t.Fatal(err)
	}
	tr := lv.Status.Transfer
	if tr.TokenAttempt != 2 || tr.SourceAddress != "10.244.2.7:9830" || tr.Attempt != 2 ||
		tr.Phase != topolvmv1.TransferWaiting {
		t.Fatalf("status.transfer %+v", tr)
	}
	claims, err := transfer.NewVerifier(pub, nil).Accept(tr.Token, "node-a")
	want := transfer.Claims{Source: transfer.Volume{Node: "node-b", Class: "thin", LV: "snap-1"},
		Target: transfer.Volume{Node: "node-a", Class: "thin", LV: "uid-1"}}
	if err != nil || claims.Source != want.Source || claims.Target != want.Target ||
		claims.Expires.Sub(now) != DefaultTokenTTL {
		t.Errorf("token claims %+v, %v; want %+v expiring in %s", claims, err, want, DefaultTokenTTL)
	}
	if len(rec.reasons) != 1 || rec.reasons[0] != ReasonCopyRetried {
		t.Errorf("events %v, want [%s]", rec.reasons, ReasonCopyRetried)
	}
}

func TestTokenCases(t *testing.T) {
	t.Run("no agent running on the source node: retried", func(t *testing.T) {
		r, _, _, _ := newReconciler(t, time.Now(), restore(1, 0, topolvmv1.TransferWaiting),
			agentPod("agent-a", "node-a", "10.244.1.5", corev1.PodRunning))
		if res := reconcileLV(t, r); res.RequeueAfter != agentMissingRetry {
			t.Errorf("result %+v, want a retry after %s", res, agentMissingRetry)
		}
	})
	t.Run("a token of the attempt exists: nothing issued", func(t *testing.T) {
		lv := restore(1, 1, topolvmv1.TransferCopying)
		lv.Status.Transfer.Token = "kept"
		r, c, _, rec := newReconciler(t, time.Now(), lv, agentPod("agent-b", "node-b", "10.244.2.7", corev1.PodRunning))
		reconcileLV(t, r)
		got := &topolvmv1.LogicalVolume{}
		if err := c.Get(t.Context(), types.NamespacedName{Name: "pvc-1"}, got); err != nil {
			t.Fatal(err)
		}
		if got.Status.Transfer.Token != "kept" || len(rec.reasons) != 0 {
			t.Errorf("token %q, events %v", got.Status.Transfer.Token, rec.reasons)
		}
	})
	t.Run("a completed copy is reported once", func(t *testing.T) {
		now := time.Now()
		lv := restore(1, 1, topolvmv1.TransferComplete)
		lv.Status.Transfer.CompletionTime = &metav1.Time{Time: now.Add(-time.Second)}
		r, _, _, rec := newReconciler(t, now, lv)
		reconcileLV(t, r)
		reconcileLV(t, r)
		if len(rec.reasons) != 1 || rec.reasons[0] != ReasonCopyComplete {
			t.Errorf("events %v, want one %s", rec.reasons, ReasonCopyComplete)
		}
	})
}
