package claimevents_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/claimevents"
)

const (
	appNamespace = "apps"
	// degraded is node-1's reason for its Degraded volume group.
	degraded = "physical volume /dev/vdd is missing"
)

// TestClaimEvents runs the controller against a cluster of three nodes for device class thick:
// node-0 has 15.9Gi free, node-1 reports the volume group Degraded and control-plane has none.
func TestClaimEvents(t *testing.T) {
	ctx := t.Context()
	createCluster(ctx, t)
	big := createClaimAndPod(ctx, t, "big", "100Gi")
	small := createClaimAndPod(ctx, t, "small", "1Gi")

	want := "no node can hold 100Gi (107374182400 bytes) of device class thick: " +
		"node-0: 15.9Gi (17041457152 bytes) free; " +
		"node-1: device class thick is Degraded: " + degraded + "; " +
		"control-plane: device class thick is not on this node"
	var first eventsv1.Event
	eventually(t, "the NotEnoughCapacity event on claim big", func(ctx context.Context) error {
		events, err := capacityEvents(ctx, big)
		if err != nil {
			return err
		}
		if len(events) == 0 {
			return errors.New("no event yet")
		}
		first = events[0]
		return nil
	})
	t.Logf("event on claim big: %s", first.Note)
	if first.Note != want {
		t.Fatalf("note\n got %q\nwant %q", first.Note, want)
	}
	if first.Type != corev1.EventTypeWarning || first.Action != claimevents.ActionProvision ||
		first.Related == nil || first.Related.Kind != "Pod" || first.Related.Name != "big" {
		t.Errorf("event %s %s, related %+v: want a Warning of action Provision related to Pod big",
			first.Type, first.Action, first.Related)
	}

	t.Run("recorded once while nothing changes", func(t *testing.T) {
		time.Sleep(10 * recheck) // about ten rechecks of both pods
		events, err := capacityEvents(t.Context(), big)
		if err != nil {
			t.Fatal(err)
		}
		// A repeat of the same event would make the recorder turn it into a series.
		if len(events) != 1 || events[0].Series != nil {
			t.Fatalf("want one event without series, got %d: %+v", len(events), events)
		}
	})
	t.Run("no event for a claim that fits", func(t *testing.T) {
		events, err := capacityEvents(t.Context(), small)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != 0 {
			t.Fatalf("claim small fits on node-0 but got %+v", events)
		}
	})
	t.Run("a changed note waits for the recorder's series to end", func(t *testing.T) {
		setCapacity(t.Context(), t, "node-0", 10<<30) // nothing about the pod changes
		time.Sleep(10 * recheck)
		events, err := capacityEvents(t.Context(), big)
		if err != nil {
			t.Fatal(err)
		}
		// Recorded now, the new note would only count as a repeat of the first event.
		if len(events) != 1 || events[0].Series != nil || events[0].Note != want {
			t.Fatalf("want the first event alone and unchanged, got %+v", events)
		}
	})
}

// createCluster creates the nodes, node-1's status, StorageClass lvms-thick and the app namespace.
func createCluster(ctx context.Context, t *testing.T) {
	t.Helper()
	objs := []client.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "control-plane"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0",
			Annotations: map[string]string{"capacity.topolvm.io/thick": "17041457152"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1",
			Annotations: map[string]string{"capacity.topolvm.io/thick": "53687091200"}}},
		&lvmv1alpha1.LVMVolumeGroupNodeStatus{
			ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "node-1"},
			Spec: lvmv1alpha1.LVMVolumeGroupNodeStatusSpec{LiveNodeStatus: []lvmv1alpha1.VGStatus{
				{Name: "thick", Status: lvmv1alpha1.VGStatusDegraded, Reason: degraded},
			}},
		},
		&storagev1.StorageClass{
			ObjectMeta:        metav1.ObjectMeta{Name: "lvms-thick"},
			Provisioner:       "topolvm.io",
			Parameters:        map[string]string{"topolvm.io/device-class": "thick"},
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNamespace}},
		// The ServiceAccount admission plugin wants it; no controller-manager creates it here.
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: "default"}},
	}
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// createClaimAndPod creates claim name of size on lvms-thick and Pod name using it, which the
// scheduler could not place.
func createClaimAndPod(ctx context.Context, t *testing.T, name, size string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To("lvms-thick"),
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			},
		},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
			}}},
		},
	}
	for _, o := range []client.Object{pvc, pod} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, name, err)
		}
	}
	pod.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message:            "0/3 nodes are available: 3 node(s) did not have enough free storage.",
		LastTransitionTime: metav1.Now(),
	}}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatalf("set Pod %s unschedulable: %v", name, err)
	}
	return pvc
}

// setCapacity sets node's capacity annotation of device class thick.
func setCapacity(ctx context.Context, t *testing.T, node string, bytes int64) {
	t.Helper()
	n := &corev1.Node{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Annotations["capacity.topolvm.io/thick"] = strconv.FormatInt(bytes, 10)
	if err := k8s.Patch(ctx, n, patch); err != nil {
		t.Fatal(err)
	}
}

// capacityEvents are the NotEnoughCapacity events regarding pvc, oldest first.
func capacityEvents(ctx context.Context, pvc *corev1.PersistentVolumeClaim) ([]eventsv1.Event, error) {
	var list eventsv1.EventList
	if err := k8s.List(ctx, &list, client.InNamespace(pvc.Namespace)); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.UID == pvc.UID && e.Reason == claimevents.ReasonNotEnoughCapacity {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	return out, nil
}
