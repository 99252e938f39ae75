package transfertoken

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

// clone is a LogicalVolume on node-a cloning volume vol-1 of node-b, at attempt 1 waiting for a token.
func clone() *topolvmv1.LogicalVolume {
	lv := restore(1, 0, topolvmv1.TransferWaiting)
	lv.Spec.Source = "vol-1"
	lv.Annotations[driver.AnnotationCopyImage] = "true"
	return lv
}

func getLV(t *testing.T, c client.Client, name string) *topolvmv1.LogicalVolume {
	t.Helper()
	lv := &topolvmv1.LogicalVolume{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: name}, lv); err != nil {
		t.Fatalf("get LogicalVolume %s: %v", name, err)
	}
	return lv
}

// setImage records what the source's node reported for the image.
func setImage(t *testing.T, c client.Client, st topolvmv1.LogicalVolumeStatus) {
	t.Helper()
	img := getLV(t, c, ImagePrefix+"uid-1")
	img.Status = st
	if err := c.Status().Update(t.Context(), img); err != nil {
		t.Fatal(err)
	}
}

// TestCloneCopiesItsImage: a clone from another node gets no token until the operator's read-only
// snapshot of its source (the image, owned by the clone) exists on the source's node; its token names
// the image's LV; the image is deleted once the copy is complete.
func TestCloneCopiesItsImage(t *testing.T) {
	now := time.Now()
	r, c, pub, _ := newReconciler(t, now, clone(), agentPod("agent-b", "node-b", "10.244.2.7", corev1.PodRunning))
	reconcileLV(t, r)
	img := getLV(t, c, ImagePrefix+"uid-1")
	want := topolvmv1.LogicalVolumeSpec{Name: img.Name, NodeName: "node-b", DeviceClass: "thin", Source: "vol-1",
		AccessType: topolvmv1.AccessTypeReadOnly, Size: clone().Spec.Size}
	if img.Spec.Name != want.Name || img.Spec.NodeName != want.NodeName || img.Spec.Source != want.Source ||
		img.Spec.AccessType != want.AccessType || img.Spec.Size.Cmp(want.Size) != 0 || img.Spec.SourceNode != "" {
		t.Errorf("image spec %+v, want %+v", img.Spec, want)
	}
	if ref := metav1.GetControllerOf(img); ref == nil || ref.UID != "uid-1" {
		t.Errorf("image controller %+v, want the clone uid-1", ref)
	}
	if tok := getLV(t, c, "pvc-1").Status.Transfer.Token; tok != "" {
		t.Fatalf("a token before the image exists: %q", tok)
	}

	setImage(t, c, topolvmv1.LogicalVolumeStatus{VolumeID: "img-lv"})
	reconcileLV(t, r)
	claims, err := transfer.NewVerifier(pub, nil).Accept(getLV(t, c, "pvc-1").Status.Transfer.Token, "node-a")
	if err != nil || claims.Source != (transfer.Volume{Node: "node-b", Class: "thin", LV: "img-lv"}) {
		t.Fatalf("token claims %+v, %v; want the image's LV img-lv as the source", claims, err)
	}

	lv := getLV(t, c, "pvc-1")
	lv.Status.Transfer.Phase = topolvmv1.TransferComplete
	lv.Status.Transfer.CompletionTime = &metav1.Time{Time: now}
	if err := c.Status().Update(t.Context(), lv); err != nil {
		t.Fatal(err)
	}
	reconcileLV(t, r)
	if err := c.Get(t.Context(), types.NamespacedName{Name: img.Name}, img); err == nil {
		t.Errorf("the image %s outlives the complete copy", img.Name)
	}
}

// TestFailedImage: an image the source's node failed to make (its source is gone) gives a token
// naming an LV that does not exist there (the image's object name), so the source's agent refuses the copy and the clone fails;
// the claim hears why.
func TestFailedImage(t *testing.T) {
	r, c, pub, rec := newReconciler(t, time.Now(), clone(),
		agentPod("agent-b", "node-b", "10.244.2.7", corev1.PodRunning))
	reconcileLV(t, r)
	setImage(t, c, topolvmv1.LogicalVolumeStatus{Code: 5, Message: "source LV not found"})
	reconcileLV(t, r)
	img := getLV(t, c, ImagePrefix+"uid-1")
	claims, err := transfer.NewVerifier(pub, nil).Accept(getLV(t, c, "pvc-1").Status.Transfer.Token, "node-a")
	if err != nil || claims.Source.LV != img.Name {
		t.Errorf("token claims %+v, %v; want the failed image's name %s, no LV's", claims, err, img.Name)
	}
	if len(rec.reasons) == 0 || rec.reasons[0] != ReasonImageFailed {
		t.Errorf("events %v, want %s first", rec.reasons, ReasonImageFailed)
	}
}

// TestForeignImageName: an object of the image's name that the clone does not control is never used
// nor deleted.
func TestForeignImageName(t *testing.T) {
	foreign := &topolvmv1.LogicalVolume{ObjectMeta: metav1.ObjectMeta{Name: ImagePrefix + "uid-1"},
		Status: topolvmv1.LogicalVolumeStatus{VolumeID: "someone-else"}}
	r, c, _, _ := newReconciler(t, time.Now(), clone(), foreign,
		agentPod("agent-b", "node-b", "10.244.2.7", corev1.PodRunning))
	if _, err := r.Reconcile(
		t.Context(),
		ctrl.Request{NamespacedName: types.NamespacedName{Name: "pvc-1"}},
	); err == nil {
		t.Error("a LogicalVolume of the image's name the clone does not control was accepted")
	}
	if tok := getLV(t, c, "pvc-1").Status.Transfer.Token; tok != "" {
		t.Errorf("token %q issued", tok)
	}
}
