package claimevents

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// podOption and claimOption shape the test objects.
type (
	podOption   func(*corev1.Pod)
	claimOption func(*corev1.PersistentVolumeClaim)
)

// testPod is Pod app in namespace ns, unschedulable unless an option says otherwise.
func testPod(opts ...podOption) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", UID: "pod-uid"},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withClaim(name string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
		}})
	}
}

func withEphemeral(volume string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
			Ephemeral: &corev1.EphemeralVolumeSource{},
		}})
	}
}

func scheduled(p *corev1.Pod) { p.Status.Conditions = nil; p.Spec.NodeName = "n1" }

// testClaim is a Pending claim of size on StorageClass class.
func testClaim(name, class, size string, opts ...claimOption) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func ownedByPod(c *corev1.PersistentVolumeClaim) {
	c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "app", UID: "pod-uid",
		Controller: ptr.To(true)}}
}

// cluster is one node with 5Gi free in device class thin, StorageClass lvms-thin and nfs.
func cluster() []client.Object {
	return []client.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1",
			Annotations: map[string]string{"capacity.topolvm.io/thin": "5368709120"}}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "lvms-thin"}, Provisioner: "topolvm.io",
			Parameters: map[string]string{"topolvm.io/device-class": "thin"}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "nfs"}, Provisioner: "nfs.csi.k8s.io"},
	}
}

const tooBig = "Warning NotEnoughCapacity no node can hold 10Gi (10737418240 bytes) of device class thin: " +
	"n1: 5Gi (5368709120 bytes) free"

// TestReconcile checks which claims of which Pods get an event.
func TestReconcile(t *testing.T) {
	cases := []struct {
		name    string
		pod     *corev1.Pod
		claims  []client.Object
		events  []string
		requeue bool
	}{
		{"too big", testPod(withClaim("data")), []client.Object{testClaim("data", "lvms-thin", "10Gi")},
			[]string{tooBig}, true},
		{"fits", testPod(withClaim("data")), []client.Object{testClaim("data", "lvms-thin", "1Gi")}, nil, true},
		{"scheduled", testPod(withClaim("data"), scheduled),
			[]client.Object{testClaim("data", "lvms-thin", "10Gi")}, nil, false},
		{"other driver", testPod(withClaim("data")), []client.Object{testClaim("data", "nfs", "10Gi")}, nil, false},
		{"bound", testPod(withClaim("data")), []client.Object{testClaim("data", "lvms-thin", "10Gi",
			func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimBound })}, nil, false},
		// Missing, or not in the cache yet: looked at again.
		{"missing claim", testPod(withClaim("data")), nil, nil, true},
		{"ephemeral", testPod(withEphemeral("scratch")),
			[]client.Object{testClaim("app-scratch", "lvms-thin", "10Gi", ownedByPod)}, []string{tooBig}, true},
		{"ephemeral claim of another pod", testPod(withEphemeral("scratch")),
			[]client.Object{testClaim("app-scratch", "lvms-thin", "10Gi")}, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := append(cluster(), tc.claims...)
			r, rec := newTestReconciler(t, nil, append(objs, tc.pod)...)
			res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tc.pod)})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.RequeueAfter > 0; got != tc.requeue {
				t.Errorf("requeue = %t, want %t", got, tc.requeue)
			}
			if got := drain(rec); strings.Join(got, "\n") != strings.Join(tc.events, "\n") {
				t.Errorf("events\n got %q\nwant %q", got, tc.events)
			}
		})
	}
}

// TestReconcileRepeats checks that a note is recorded once, a changed one once the recorder's series
// of the previous event has ended, and a shortage that comes back after the claim fitted likewise.
func TestReconcileRepeats(t *testing.T) {
	ctx := t.Context()
	pod, claim := testPod(withClaim("data")), testClaim("data", "lvms-thin", "10Gi")
	r, rec := newTestReconciler(t, nil, append(cluster(), pod, claim)...)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	c := r.client.(client.Client)
	step := func(what string, advance time.Duration, free string, want ...string) {
		t.Helper()
		now = now.Add(advance)
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, n); err != nil {
			t.Fatal(err)
		}
		n.Annotations["capacity.topolvm.io/thin"] = free
		if err := c.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pod)}); err != nil {
			t.Fatal(err)
		}
		if got := drain(rec); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: events\n got %q\nwant %q", what, got, want)
		}
	}
	const fourGi = "Warning NotEnoughCapacity no node can hold 10Gi (10737418240 bytes) of device class thin: " +
		"n1: 4Gi (4294967296 bytes) free"
	step("first look", 0, "5368709120", tooBig)
	step("nothing changed", time.Minute, "5368709120")
	step("changed within the window", time.Minute, "4294967296")
	step("changed note, still within the window", 10*time.Minute, "4294967296")
	step("changed note after the window", time.Minute, "4294967296", fourGi)
	step("fits", time.Minute, "21474836480")
	step("short again within the window", time.Minute, "5368709120")
	step("short again after the window", 11*time.Minute, "5368709120", tooBig)
	step("nothing changed long after", time.Hour, "5368709120")
}

// TestReconcileAPIError checks that a failed read is returned with what was read.
func TestReconcileAPIError(t *testing.T) {
	down := errors.New("connection refused")
	pod := testPod(withClaim("data"))
	r, _ := newTestReconciler(t, &interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.NodeList); ok {
				return down
			}
			return c.List(ctx, list, opts...)
		},
	}, append(cluster(), pod, testClaim("data", "lvms-thin", "10Gi"))...)
	_, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pod)})
	if !errors.Is(err, down) || !strings.Contains(err.Error(), "explain PersistentVolumeClaim ns/data: list Nodes") {
		t.Fatalf("error = %v, want the wrapped API error", err)
	}
}

// TestLastNotesBound checks that the memory of notes stays within its bound.
func TestLastNotesBound(t *testing.T) {
	m := newLastNotes(2)
	now := time.Now()
	for _, uid := range []types.UID{"a", "b", "c", "d"} {
		if !m.record(uid, "note", now) {
			t.Errorf("first note of %s not recorded", uid)
		}
	}
	if m.len() != 2 {
		t.Errorf("remembers %d claims, want 2", m.len())
	}
	m.forget("d")
	if m.len() != 1 || !m.record("d", "note", now) {
		t.Error("a forgotten claim's note is not recorded at once")
	}
}

func newTestReconciler(
	t *testing.T,
	funcs *interceptor.Funcs,
	objs ...client.Object,
) (*Reconciler, *events.FakeRecorder) {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := lvmv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	c := b.Build()
	rec := events.NewFakeRecorder(10)
	return New(c, c, rec, Options{Namespace: "lvms-system"}), rec
}

// drain returns the events recorded so far.
func drain(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
