package evacuator

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lvm-operator/lvm-operator/internal/mobility/mobilitytest"
)

// world is the mobility tests' world (claim prod/data-db-0 on node-a, used by pod db-0) with node-a
// labelled for evacuation when labelled is set.
func world(labelled bool) []client.Object {
	objs := mobilitytest.World()
	for _, o := range objs {
		if pv, ok := o.(*corev1.PersistentVolume); ok {
			pv.Status.Phase = corev1.VolumeBound
		}
	}
	if labelled {
		objs[0].SetLabels(map[string]string{"lvms.topolvm.io/evacuate": "true"})
	}
	return objs
}

// pass runs one pass of an evacuator over c while the simulator plays the cluster, and returns the
// events it recorded.
func pass(t *testing.T, c client.Client, o Options) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	mobilitytest.Simulate(ctx, c, &wg)
	defer func() { cancel(); wg.Wait() }()
	trigger, err := ParseTrigger(DefaultLabel, false)
	if err != nil {
		t.Fatal(err)
	}
	o.Triggers = []Trigger{trigger}
	o.PollInterval, o.MoveTimeout = 5*time.Millisecond, 10*time.Second
	rec := events.NewFakeRecorder(100)
	e := New(c, c, rec, testr.New(t), o)
	if err := e.Pass(ctx); err != nil {
		t.Fatalf("pass: %v", err)
	}
	close(rec.Events)
	var got []string
	for ev := range rec.Events {
		got = append(got, ev)
	}
	return got
}

func node(t *testing.T, c client.Client, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

func claimVolume(t *testing.T, c client.Client) string {
	t.Helper()
	claim := &corev1.PersistentVolumeClaim{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "prod", Name: "data-db-0"}, claim); err != nil {
		t.Fatal(err)
	}
	return claim.Spec.VolumeName
}

// TestEvacuatesALabelledNode: the labelled node is cordoned, the claim's pod evicted, the claim moved
// to node-b; the next pass reports the node Complete (the snapshot-free world leaves nothing behind).
func TestEvacuatesALabelledNode(t *testing.T) {
	c := mobilitytest.Client(t, world(true)...)
	evs := pass(t, c, Options{})
	t.Log(evs)
	if !node(t, c, "node-a").Spec.Unschedulable {
		t.Error("node-a is not cordoned")
	}
	if v := claimVolume(t, c); !strings.HasPrefix(v, "lvms-move-") {
		t.Errorf("the claim is bound to %q, want the moved PV", v)
	}
	if err := c.Get(
		t.Context(),
		client.ObjectKey{Namespace: "prod", Name: "db-0"},
		&corev1.Pod{},
	); !apierrors.IsNotFound(
		err,
	) {
		t.Errorf("pod db-0 was not evicted: %v", err)
	}
	if got := strings.Join(evs, "\n"); !strings.Contains(got, "Cordoned") ||
		!strings.Contains(got, "Moving (1/1): claim prod/data-db-0 to node node-b") {
		t.Errorf("events:\n%s", got)
	}
	evs = pass(t, c, Options{})
	if s := node(t, c, "node-a").Annotations[StatusAnnotation]; !strings.HasPrefix(s, "Complete") ||
		len(evs) != 1 || !strings.Contains(evs[0], "EvacuationComplete") {
		t.Errorf("status %q, events %v; want Complete once", s, evs)
	}
	if evs = pass(t, c, Options{}); len(evs) != 0 {
		t.Errorf("a pass with nothing new recorded %v", evs)
	}
}

// TestLeavesOtherNodes: without the trigger nothing is touched.
func TestLeavesOtherNodes(t *testing.T) {
	c := mobilitytest.Client(t, world(false)...)
	if evs := pass(t, c, Options{}); len(evs) != 0 {
		t.Errorf("events %v", evs)
	}
	if n := node(t, c, "node-a"); n.Spec.Unschedulable || n.Annotations[StatusAnnotation] != "" {
		t.Errorf("node-a changed: %+v", n)
	}
	if v := claimVolume(t, c); v != "pv-old" {
		t.Errorf("the claim is bound to %q", v)
	}
}

// TestWaitsForARefusedEviction: a PodDisruptionBudget refuses the eviction (429): the claim does not
// move, nothing is recorded on its PV, the node says what it waits for.
func TestWaitsForARefusedEviction(t *testing.T) {
	refuse := interceptor.Funcs{SubResourceCreate: func(ctx context.Context, c client.Client, sub string,
		obj, req client.Object, opts ...client.SubResourceCreateOption) error {
		if sub == "eviction" {
			return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
		}
		return c.SubResource(sub).Create(ctx, obj, req, opts...)
	}}
	c := interceptor.NewClient(mobilitytest.Client(t, world(true)...), refuse)
	evs := pass(t, c, Options{})
	if v := claimVolume(t, c); v != "pv-old" {
		t.Errorf("the claim moved to %q with its pod running", v)
	}
	pv := &corev1.PersistentVolume{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: "pv-old"}, pv); err != nil ||
		pv.Annotations[mobilitytest.MoveToAnnotation] != "" {
		t.Errorf("PV pv-old %v: %v", pv.Annotations, err)
	}
	s := node(t, c, "node-a").Annotations[StatusAnnotation]
	if !strings.Contains(s, "Waiting (1/1)") || !strings.Contains(s, "disruption budget") {
		t.Errorf("status %q (events %v)", s, evs)
	}
}

// TestWaitsForTheWorkload: after moving a claim whose pod had a controller, the evacuator waits for a
// Ready pod using it; none comes here, so it says so after ReadyTimeout.
func TestWaitsForTheWorkload(t *testing.T) {
	objs := world(true)
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok {
			pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db",
				UID: "sts-uid", Controller: new(true)}}
		}
	}
	c := mobilitytest.Client(t, objs...)
	evs := strings.Join(pass(t, c, Options{ReadyTimeout: 20 * time.Millisecond}), "\n")
	if !strings.Contains(evs, "WorkloadNotReady") {
		t.Errorf("events:\n%s", evs)
	}
}

func TestParseTrigger(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a.io/x": "yes"},
		Annotations: map[string]string{"b.io/y": "drain me"}}}
	for _, tc := range []struct {
		in         string
		annotation bool
		want       bool
		err        bool
	}{
		{"a.io/x", false, true, false},
		{"a.io/x=yes", false, true, false},
		{"a.io/x=no", false, false, false},
		{"b.io/y", false, false, false},
		{"b.io/y=drain me", true, true, false},
		{"b.io/y", true, true, false},
		{"a.io/x=not a label value", false, false, true},
		{"/x", false, false, true},
		{"", true, false, true},
	} {
		tr, err := ParseTrigger(tc.in, tc.annotation)
		if (err != nil) != tc.err {
			t.Errorf("ParseTrigger(%q, %t): %v", tc.in, tc.annotation, err)
			continue
		}
		if err == nil && tr.Matches(n) != tc.want {
			t.Errorf("%s matches: %t, want %t", tr, tr.Matches(n), tc.want)
		}
	}
}

// TestNoMoveToANodeBeingEvacuated: with both nodes labelled, both are cordoned before any plan, so
// the claim has nowhere to go: the node says so and nothing moves.
func TestNoMoveToANodeBeingEvacuated(t *testing.T) {
	objs := world(true)
	objs[1].SetLabels(map[string]string{"lvms.topolvm.io/evacuate": "true"})
	c := mobilitytest.Client(t, objs...)
	pass(t, c, Options{})
	if v := claimVolume(t, c); v != "pv-old" {
		t.Errorf("the claim moved to %q", v)
	}
	if s := node(t, c, "node-a").Annotations[StatusAnnotation]; !strings.HasPrefix(s, "Blocked") ||
		!strings.Contains(s, "fits on no other schedulable node") || !node(t, c, "node-b").Spec.Unschedulable {
		t.Errorf("node-a status %q; node-b must be cordoned", s)
	}
}
