package logicalvolume

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

// A LogicalVolume whose source is on another node (spec.sourceNode) is made in three steps: the LV is
// created here (ensureCreated), then filled with a copy of the source's data that this agent fetches
// from the source node's agent (ensureCopied), and only then does it get its volume ID, which is what
// the CSI controller waits for. Each fetch is an attempt that needs a token of its own, which the
// operator writes into status.transfer for status.transfer.attempt. A fetch runs outside the
// reconcile (it can take minutes); its checkpoints and its end wake the reconcile, which records the
// progress in the status, so a restarted agent resumes from the last verified byte.

// Fetcher copies a source on another node into a local device; the node agent's transfer client.
type Fetcher interface {
	Fetch(ctx context.Context, f Fetch, onCheckpoint func(transfer.Progress)) (transfer.Progress, error)
}

// Fetch is one attempt of a copy.
type Fetch struct {
	// SourceNode, Address and Token say where the source's agent serves and what grants the read.
	SourceNode, Address, Token string
	// Device is the target LV's device; From the progress of earlier attempts.
	Device string
	From   transfer.Progress
	// Dense asks for every byte (a thick target).
	Dense bool
}

// Condition reasons of copies.
const (
	ReasonCopied          = "Copied"
	ReasonCopying         = "Copying"
	ReasonWaitingForToken = "WaitingForToken"
)

// errCopying: the copy is not complete yet; not a failure.
var errCopying = errors.New("copy in progress")

// copies runs the fetches of one node, at most one per LogicalVolume.
type copies struct {
	fetcher Fetcher
	wake    chan event.GenericEvent
	// backoff is the wait after a failed attempt before it is reported (and the next one asked for).
	backoff func(attempt int32) time.Duration

	mu   sync.Mutex
	runs map[string]*run // by LogicalVolume name
}

// run is one fetch: its progress so far and, once done, its result.
type run struct {
	attempt  int32
	cancel   context.CancelFunc
	progress transfer.Progress
	done     bool
	err      error
}

func newCopies(f Fetcher) *copies {
	return &copies{fetcher: f, wake: make(chan event.GenericEvent, 64), runs: map[string]*run{},
		backoff: func(a int32) time.Duration { return min(time.Duration(1<<min(a, 6))*time.Second, time.Minute) }}
}

// start begins attempt f of obj's copy, into an LV of size bytes, in the background.
func (c *copies) start(obj *topolvmv1.LogicalVolume, attempt int32, size uint64, f Fetch) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{attempt: attempt, cancel: cancel, progress: f.From}
	c.mu.Lock()
	c.runs[obj.Name] = r
	c.mu.Unlock()
	wake := func() {
		select {
		case c.wake <- event.GenericEvent{Object: obj}:
		default: // a wake is pending already
		}
	}
	meter := newAttemptMeter(obj.Name, f.SourceNode, size, f.From)
	go func() {
		p, err := c.fetcher.Fetch(ctx, f, func(p transfer.Progress) {
			meter.progress(p)
			c.mu.Lock()
			r.progress = p
			c.mu.Unlock()
			wake()
		})
		meter.end(p, err, ctx.Err() != nil)
		if err != nil && ctx.Err() == nil {
			select { // a failed attempt waits before the next token is asked for
			case <-ctx.Done():
			case <-time.After(c.backoff(attempt)):
			}
		}
		c.mu.Lock()
		r.progress, r.err, r.done = p, err, true
		c.mu.Unlock()
		wake()
	}()
}

// state returns the run of name (a copy of it); ok is false when none.
func (c *copies) state(name string) (run, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.runs[name]
	if !ok {
		return run{}, false
	}
	return *r, true
}

// forget drops the finished run of name.
func (c *copies) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.runs, name)
}

// stop cancels the run of name, if any (its LogicalVolume is being deleted).
func (c *copies) stop(name string) {
	c.mu.Lock()
	r, ok := c.runs[name]
	delete(c.runs, name)
	c.mu.Unlock()
	if ok {
		r.cancel()
	}
}

// ensureCopied fills the LV of a LogicalVolume whose source is on another node; without
// spec.sourceNode there is nothing to do. It returns errCopying until the copy is complete.
func (r *Reconciler) ensureCopied(ctx context.Context, s *scope) error {
	if s.obj.Spec.SourceNode == "" {
		return nil
	}
	if s.status.Transfer == nil {
		s.status.Transfer = &topolvmv1.TransferStatus{}
	}
	t := s.status.Transfer
	if t.Phase == topolvmv1.TransferComplete {
		s.setCondition(topolvmv1.ConditionCopied, nil, ReasonCopied, "the source's data is copied and verified")
		return nil
	}
	if err := r.collect(ctx, s, t); err != nil || t.Phase == topolvmv1.TransferComplete {
		return err
	}
	if cur, ok := r.copies.state(s.obj.Name); ok && !cur.done {
		s.copying(t, "attempt %d is copying from node %s", t.Attempt, s.obj.Spec.SourceNode)
		return errCopying
	}
	switch {
	case t.Attempt == 0:
		t.Attempt, t.StartTime = 1, ptrTime(metav1.Now())
	case t.Phase == topolvmv1.TransferCopying:
		// The attempt recorded as copying has no run here: this agent restarted during it. Its
		// token is spent; the next attempt resumes from the last verified byte.
		t.Message = fmt.Sprintf("attempt %d: interrupted (the node agent restarted)", t.Attempt)
		t.Attempt++
	}
	if t.Token == "" || t.TokenAttempt != t.Attempt {
		t.Phase = topolvmv1.TransferWaiting
		s.setCondition(topolvmv1.ConditionCopied, errCopying, ReasonWaitingForToken,
			fmt.Sprintf("waiting for the operator's token of attempt %d", t.Attempt))
		return errCopying
	}
	r.copies.start(s.obj, t.Attempt, s.lv.Size, Fetch{
		SourceNode: s.obj.Spec.SourceNode, Address: t.SourceAddress, Token: t.Token, Device: s.lv.Path,
		From:  transfer.Progress{Offset: uint64(t.VerifiedBytes), Bytes: uint64(t.CopiedBytes)},
		Dense: s.lv.ThinPool == "",
	})
	ctrl.LoggerFrom(ctx).Info("Copying the source's data from another node", "lv", s.name,
		"sourceNode", s.obj.Spec.SourceNode, "attempt", t.Attempt, "fromByte", t.VerifiedBytes)
	s.copying(t, "attempt %d is copying from node %s", t.Attempt, s.obj.Spec.SourceNode)
	return errCopying
}

// canCopy refuses a LogicalVolume whose source is on another node, before any LV is made for it,
// when this agent copies nothing from other nodes.
func (r *Reconciler) canCopy(_ context.Context, s *scope) error {
	if s.obj.Spec.SourceNode == "" || r.copies != nil || s.obj.Status.VolumeID != "" {
		return nil
	}
	return s.fail(topolvmv1.ConditionCopied, reconcile.TerminalError(fmt.Errorf(
		"%w: this node agent copies nothing from other nodes (it runs without --transfer-address)",
		errNoTransfers)))
}

// collect records the progress of the current run and, when it has ended, its result: complete, a
// failed attempt (the next one is asked for), or a source that does not exist (a failure).
func (r *Reconciler) collect(ctx context.Context, s *scope, t *topolvmv1.TransferStatus) error {
	cur, ok := r.copies.state(s.obj.Name)
	if !ok {
		return nil
	}
	t.VerifiedBytes, t.CopiedBytes = int64(cur.progress.Offset), int64(cur.progress.Bytes)
	if !cur.done {
		return nil
	}
	r.copies.forget(s.obj.Name)
	switch {
	case cur.err == nil && cur.progress.Complete:
		t.Phase, t.Message, t.CompletionTime = topolvmv1.TransferComplete, "", ptrTime(metav1.Now())
		s.setCondition(topolvmv1.ConditionCopied, nil, ReasonCopied, "the source's data is copied and verified")
		ctrl.LoggerFrom(ctx).Info("Copied the source's data from another node", "lv", s.name,
			"sourceNode", s.obj.Spec.SourceNode, "bytes", t.CopiedBytes, "attempts", t.Attempt)
		return nil
	case errors.Is(cur.err, transfer.ErrNotFound):
		return s.fail(topolvmv1.ConditionCopied, reconcile.TerminalError(fmt.Errorf("%w: on node %s: %w",
			errSourceNotFound, s.obj.Spec.SourceNode, cur.err)))
	}
	if cur.err == nil {
		cur.err = errors.New("the source's stream ended early")
	}
	t.Message = fmt.Sprintf("attempt %d: %v", cur.attempt, cur.err)
	t.Attempt, t.Phase = cur.attempt+1, topolvmv1.TransferWaiting
	ctrl.LoggerFrom(ctx).Info("A copy attempt failed; asking for the next", "lv", s.name,
		"attempt", cur.attempt, "error", cur.err.Error(), "verifiedBytes", t.VerifiedBytes)
	return nil
}

// copying marks the copy as going on.
func (s *scope) copying(t *topolvmv1.TransferStatus, format string, args ...any) {
	t.Phase = topolvmv1.TransferCopying
	s.setCondition(topolvmv1.ConditionCopied, errCopying, ReasonCopying, fmt.Sprintf(format, args...))
}

// errNoTransfers: a LogicalVolume needs a copy from another node and this agent cannot fetch one.
var errNoTransfers = errors.New("no transfers")

func ptrTime(t metav1.Time) *metav1.Time { return &t }
