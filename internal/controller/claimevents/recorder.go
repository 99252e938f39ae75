package claimevents

import (
	"context"
	"fmt"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// reportingController names the operator in the events it records.
const reportingController = "lvms-operator"

// newRecorder returns the recorder of the controller's events, recording from now until mgr stops.
// Its broadcaster is the controller's own, not the manager's, so that a NotEnoughCapacity event the
// API server did not take is reported to lost: the recorder gives up on an event the server refuses
// (an etcd timeout, a throttled request) and would never write it, while the controller would
// remember the note as sent and never record it again.
func newRecorder(mgr ctrl.Manager, lost func(claim types.UID)) (events.EventRecorder, error) {
	api, err := eventsv1client.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("events client: %w", err)
	}
	b := events.NewBroadcaster(&reportingSink{EventSink: &events.EventSinkImpl{Interface: api}, lost: lost})
	// Started here, not with the manager: an event recorded before the broadcaster has a sink is
	// dropped, and the controller may run first.
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), mgr.GetLogger().WithName("claimevents")))
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		cancel()
		return nil, fmt.Errorf("start events broadcaster: %w", err)
	}
	if err := mgr.Add(stopOnExit(func() { cancel(); b.Shutdown() })); err != nil {
		cancel()
		return nil, fmt.Errorf("add events broadcaster: %w", err)
	}
	return b.NewRecorder(mgr.GetScheme(), reportingController), nil
}

// reportingSink writes events and reports the claims whose NotEnoughCapacity event failed to be
// created. A series update that fails is no loss: the first event of the series exists.
type reportingSink struct {
	events.EventSink
	lost func(claim types.UID)
}

// Create creates event and reports it to lost if that fails.
func (s *reportingSink) Create(ctx context.Context, event *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := s.EventSink.Create(ctx, event)
	if err != nil && !apierrors.IsAlreadyExists(err) && event.Reason == ReasonNotEnoughCapacity {
		s.lost(event.Regarding.UID)
	}
	return out, err
}

// stopOnExit is a manager runnable that calls itself when the manager stops, leader or not.
type stopOnExit func()

// Start waits for the manager to stop.
func (s stopOnExit) Start(ctx context.Context) error {
	<-ctx.Done()
	s()
	return nil
}

// NeedLeaderElection is false: the broadcaster records from the start on every replica.
func (stopOnExit) NeedLeaderElection() bool { return false }
