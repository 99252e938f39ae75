package claimevents

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// sinkCall is one write that reached the fake API server.
type sinkCall struct {
	verb   string
	reason string
	claim  types.UID
	err    error
}

// fakeSink answers the broadcaster's creates from a queue of errors (nil: written), patches with
// NotFound until a create succeeded, and reports each write.
type fakeSink struct {
	errs    chan error
	calls   chan sinkCall
	created atomic.Bool
}

func (f *fakeSink) answer(verb string, e *eventsv1.Event) (*eventsv1.Event, error) {
	var err error
	switch {
	case verb != "create" && !f.created.Load():
		err = apierrors.NewNotFound(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, e.Name)
	case verb == "create":
		select {
		case err = <-f.errs:
		default:
		}
		f.created.Store(err == nil)
	}
	f.calls <- sinkCall{verb: verb, reason: e.Reason, claim: e.Regarding.UID, err: err}
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (f *fakeSink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return f.answer("create", e)
}

func (f *fakeSink) Update(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return f.answer("update", e)
}

func (f *fakeSink) Patch(_ context.Context, e *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	return f.answer("patch", e)
}

// next waits for the next write.
func (f *fakeSink) next(t *testing.T) sinkCall {
	t.Helper()
	select {
	case c := <-f.calls:
		return c
	case <-time.After(30 * time.Second):
		t.Fatal("no write reached the API server")
		return sinkCall{}
	}
}

// TestReportingSink checks which failed writes are reported as lost.
func TestReportingSink(t *testing.T) {
	serverError := apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
	exists := apierrors.NewAlreadyExists(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "e")
	cases := []struct {
		name   string
		reason string
		err    error
		lost   bool
	}{
		{"written", ReasonNotEnoughCapacity, nil, false},
		{"refused", ReasonNotEnoughCapacity, serverError, true},
		{"transport error", ReasonNotEnoughCapacity, errors.New("connection reset by peer"), true},
		{"already there", ReasonNotEnoughCapacity, exists, false},
		{"another reason", "Other", serverError, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeSink{errs: make(chan error, 1), calls: make(chan sinkCall, 1)}
			fake.errs <- tc.err
			var lost []types.UID
			s := &reportingSink{EventSink: fake, lost: func(c types.UID) { lost = append(lost, c) }}
			e := &eventsv1.Event{Reason: tc.reason}
			e.Regarding.UID = "claim-uid"
			if _, err := s.Create(t.Context(), e); !errors.Is(err, tc.err) {
				t.Fatalf("Create returned %v, want %v", err, tc.err)
			}
			if got := len(lost) == 1 && lost[0] == "claim-uid"; got != tc.lost || len(lost) > 1 {
				t.Fatalf("lost = %v, want reported: %t", lost, tc.lost)
			}
		})
	}
}

// TestLostEventRecordedAgain runs the reconciler with client-go's broadcaster over a sink whose first
// create fails as an etcd timeout does (the broadcaster does not retry it): the next look at the
// claim records the event again, and it reaches the API server.
func TestLostEventRecordedAgain(t *testing.T) {
	ctx := t.Context()
	pod, claim := testPod(withClaim("data")), testClaim("data", "lvms-thin", "10Gi")
	r, _ := newTestReconciler(t, nil, append(cluster(), pod, claim)...)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	fake := &fakeSink{errs: make(chan error, 1), calls: make(chan sinkCall, 10)}
	fake.errs <- apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
	b := events.NewBroadcaster(&reportingSink{EventSink: fake, lost: r.sent.forget})
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	recorded := &countingRecorder{EventRecorder: b.NewRecorder(r.client.(client.Client).Scheme(), reportingController)}
	r.recorder = recorded

	look := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pod)}); err != nil {
			t.Fatal(err)
		}
	}
	look()
	if c := fake.next(t); c.verb != "create" || c.claim != claim.UID || c.err == nil {
		t.Fatalf("first write %+v, want the failed create of the claim's event", c)
	}
	// The failure is reported after the sink returns: wait until the claim is forgotten.
	for deadline := time.Now().Add(30 * time.Second); r.sent.len() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lost event was not reported")
		}
	}
	now = now.Add(time.Minute)
	look()
	// The broadcaster still holds the first event: it patches its series, finds no event and
	// creates it.
	for {
		c := fake.next(t)
		if c.verb == "create" {
			if c.err != nil || c.reason != ReasonNotEnoughCapacity {
				t.Fatalf("second create %+v, want the event written", c)
			}
			break
		}
		if c.verb != "patch" {
			t.Fatalf("unexpected write %+v", c)
		}
	}
	// A written event is not recorded again. This is counted at the recorder: the broadcaster would
	// fold a repeat into the series it holds without a write, and it patches that series by itself
	// (at its start, then every 30 minutes), so the writes reaching the API server cannot tell.
	before := recorded.n.Load()
	now = now.Add(time.Minute)
	look()
	if n := recorded.n.Load() - before; n != 0 {
		t.Fatalf("a written event was recorded again (%d times)", n)
	}
}

// countingRecorder counts the events recorded through it.
type countingRecorder struct {
	events.EventRecorder
	n atomic.Int32
}

func (c *countingRecorder) Eventf(
	regarding, related runtime.Object, eventtype, reason, action, note string, args ...any,
) {
	c.n.Add(1)
	c.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}
