// Package evacuator is the drain mode of node evacuation (lvms evacuator): a node that carries a
// label or annotation the admin names is cordoned and every bound claim on it is moved to another
// node, one claim at a time, as kubectl lvms evacuate does (internal/mobility). The pods that use a
// claim are evicted through the Eviction API, so PodDisruptionBudgets hold: a claim whose eviction is
// refused waits while the others move. After a claim whose pods had a controller has moved, the next
// one waits until a pod uses it again and is Ready (a StatefulSet keeps its quorum). Progress is the
// node's annotation lvms.topolvm.io/evacuation and Events on the node (docs/mobility.md).
package evacuator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/mobility"
)

// StatusAnnotation on a triggered node says where its evacuation is.
const StatusAnnotation = "lvms.topolvm.io/evacuation"

// FieldManager is the field manager of what the evacuator writes itself (moves write as mobility's).
const FieldManager = "lvms-evacuator"

// Defaults of Options.
const (
	DefaultResync       = 30 * time.Second
	DefaultReadyTimeout = 10 * time.Minute
	DefaultStopTimeout  = 10 * time.Minute
)

// Options configure an Evacuator.
type Options struct {
	// Triggers: a node that carries any of them is evacuated.
	Triggers []Trigger
	// MoveTimeout bounds each claim's move, PollInterval its waits (mobility's defaults when zero).
	MoveTimeout, PollInterval time.Duration
	// Resync is how often every node is looked at without an event; ReadyTimeout how long a moved claim's
	// workload may take to be Ready again; StopTimeout how long evicted pods may take to stop.
	Resync, ReadyTimeout, StopTimeout time.Duration
}

// Evacuator evacuates triggered nodes; Start runs it (a manager.Runnable that needs leader election).
type Evacuator struct {
	c     client.Client
	nodes client.Reader
	rec   events.EventRecorder
	log   logr.Logger
	o     Options
	wake  chan struct{}
}

// New is an Evacuator that acts through c (read directly from the API server: moves poll it) and
// finds triggered nodes through nodes (a cache of node metadata is enough).
func New(c client.Client, nodes client.Reader, rec events.EventRecorder, log logr.Logger, o Options) *Evacuator {
	if o.Resync == 0 {
		o.Resync = DefaultResync
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	if o.PollInterval == 0 {
		o.PollInterval = mobility.DefaultMovePollInterval
	}
	return &Evacuator{c: c, nodes: nodes, rec: rec, log: log, o: o, wake: make(chan struct{}, 1)}
}

// Wake asks for a pass as soon as the current one ends.
func (e *Evacuator) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Triggered reports whether a node with these labels and annotations is to be evacuated.
func (e *Evacuator) Triggered(obj metav1.Object) bool {
	for _, t := range e.o.Triggers {
		if t.Matches(obj) {
			return true
		}
	}
	return false
}

// NeedLeaderElection is true: one evacuator acts at a time.
func (e *Evacuator) NeedLeaderElection() bool { return true }

// Start runs a pass at once, then whenever woken and every Resync, until ctx ends.
func (e *Evacuator) Start(ctx context.Context) error {
	e.log.Info("Evacuating the nodes that carry a trigger", "triggers", fmt.Sprint(e.o.Triggers))
	t := time.NewTicker(e.o.Resync)
	defer t.Stop()
	for {
		if err := e.Pass(ctx); err != nil && ctx.Err() == nil {
			e.log.Error(err, "Evacuation pass failed; retrying", "after", e.o.Resync)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-e.wake:
		case <-t.C:
		}
	}
}

// Pass evacuates every triggered node as far as it can now.
func (e *Evacuator) Pass(ctx context.Context) error {
	var nodes metav1.PartialObjectMetadataList
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := e.nodes.List(ctx, &nodes); err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	// Every triggered node is cordoned before any plan, so that no plan sends a claim to a node that is
	// to be evacuated too.
	var triggered []string
	var errs []error
	for i := range nodes.Items {
		if n := &nodes.Items[i]; e.Triggered(n) {
			if err := e.cordon(ctx, n.Name); err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
			triggered = append(triggered, n.Name)
		}
	}
	for _, name := range triggered {
		if err := e.evacuate(ctx, name); err != nil {
			errs = append(errs, fmt.Errorf("evacuate node %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// cordon marks the node unschedulable if it still carries a trigger.
func (e *Evacuator) cordon(ctx context.Context, name string) error {
	node, ok, err := e.current(ctx, name)
	if err != nil || !ok || node.Spec.Unschedulable {
		return err
	}
	if err := mobility.SetUnschedulable(ctx, e.c, node, true, FieldManager); err != nil {
		return err
	}
	e.rec.Eventf(node, nil, corev1.EventTypeNormal, "Cordoned", "Evacuate", "Cordoned for its evacuation")
	return nil
}

// current is the node as the API server has it now, and whether it still carries a trigger.
func (e *Evacuator) current(ctx context.Context, name string) (*corev1.Node, bool, error) {
	node := &corev1.Node{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	return node, e.Triggered(node), nil
}

// evacuate plans the (cordoned) node's claims' moves and runs each that can run now. When every claim
// has moved it reports the node Complete.
func (e *Evacuator) evacuate(ctx context.Context, name string) error {
	if _, ok, err := e.current(ctx, name); err != nil || !ok {
		return err
	}
	plan, stay, err := mobility.PlanEvacuation(ctx, e.c, name)
	if err != nil {
		return e.report(ctx, name, corev1.EventTypeWarning, "EvacuationBlocked", "Blocked: %v", err)
	}
	if len(plan) == 0 {
		msg := "Complete: no claim's volume is on the node"
		if len(stay) > 0 {
			msg += fmt.Sprintf("; staying: %s", strings.Join(stay, "; "))
		}
		return e.report(ctx, name, corev1.EventTypeNormal, "EvacuationComplete", "%s", msg)
	}
	moved := false
	for i, p := range plan {
		if i > 0 {
			if _, ok, err := e.current(ctx, name); err != nil || !ok {
				return err // the trigger is gone: stop between two moves
			}
		}
		done, err := e.moveOne(ctx, name, p, i+1, len(plan))
		if err != nil {
			return err
		}
		moved = moved || done
	}
	if moved {
		e.Wake() // to report Complete, or to move what waited
	}
	return nil
}

// report sets the node's status annotation to the message and, when it changed, records an Event.
func (e *Evacuator) report(ctx context.Context, name, eventType, reason, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	node := &corev1.Node{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return fmt.Errorf("read node: %w", err)
	}
	if node.Annotations[StatusAnnotation] == msg {
		return nil
	}
	base := node.DeepCopy()
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[StatusAnnotation] = msg
	if err := e.c.Patch(ctx, node, client.MergeFrom(base), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("annotate the evacuation's status: %w", err)
	}
	e.rec.Eventf(node, nil, eventType, reason, "Evacuate", "%s", msg)
	e.log.Info("Evacuation", "node", name, "status", msg)
	return nil
}

// lineLog writes each line a move prints to the log.
type lineLog struct{ log logr.Logger }

func (l lineLog) Write(p []byte) (int, error) {
	for line := range strings.SplitSeq(string(p), "\n") {
		if line = strings.TrimSpace(strings.TrimLeft(line, "\r")); line != "" {
			l.log.Info(line)
		}
	}
	return len(p), nil
}
