package claimevents

import (
	"context"
	"errors"
	"strings"
	"testing"

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
		{"missing claim", testPod(withClaim("data")), nil, nil, false},
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

// TestReconcileRepeats checks that a note is recorded once, and again after the claim fitted.
func TestReconcileRepeats(t *testing.T) {
	ctx := t.Context()
	pod, claim := testPod(withClaim("data")), testClaim("data", "lvms-thin", "10Gi")
	r, rec := newTestReconciler(t, nil, append(cluster(), pod, claim)...)
	c := r.client.(client.Client)
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pod)}); err != nil {
			t.Fatal(err)
		}
	}
	setFree := func(bytes string) {
		t.Helper()
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, n); err != nil {
			t.Fatal(err)
		}
		n.Annotations["capacity.topolvm.io/thin"] = bytes
		if err := c.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	reconcile()
	reconcile()
	if got := drain(rec); len(got) != 1 {
		t.Fatalf("two reconciles of an unchanged cluster recorded %q, want one event", got)
	}
	setFree("21474836480") // 20Gi: fits
	reconcile()
	setFree("5368709120")
	reconcile()
	if got := drain(rec); len(got) != 1 || got[0] != tooBig {
		t.Fatalf("the shortage coming back recorded %q, want %q", got, tooBig)
	}
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
	for _, uid := range []types.UID{"a", "b", "c", "d"} {
		if !m.changed(uid, "note") {
			t.Errorf("first note of %s not reported as changed", uid)
		}
	}
	if m.len() != 2 {
		t.Errorf("remembers %d claims, want 2", m.len())
	}
	if m.changed("d", "note") {
		t.Error("a repeated note is reported as changed")
	}
	if !m.changed("d", "other note") {
		t.Error("a new note is not reported as changed")
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
