package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
)

// notifier wakes the calls waiting on a LogicalVolume name. Waiters of one name share a channel that
// the next event for that name closes.
type notifier struct {
	mu      sync.Mutex
	waiters map[string]*waiter
}

type waiter struct {
	ch   chan struct{}
	refs int
}

func newNotifier() *notifier {
	return &notifier{waiters: map[string]*waiter{}}
}

// subscribe returns a channel closed by the next event for name and a func that drops the
// subscription when the caller stops waiting.
func (n *notifier) subscribe(name string) (<-chan struct{}, func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w, ok := n.waiters[name]
	if !ok {
		w = &waiter{ch: make(chan struct{})}
		n.waiters[name] = w
	}
	w.refs++
	return w.ch, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		w.refs--
		if w.refs == 0 && n.waiters[name] == w {
			delete(n.waiters, name)
		}
	}
}

// notify wakes every waiter of name.
func (n *notifier) notify(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if w, ok := n.waiters[name]; ok {
		close(w.ch)
		delete(n.waiters, name)
	}
}

// notifyObject is the informer event handler. The informer updates its store before it calls handlers,
// so a woken waiter reads the new state from the cache.
func (n *notifier) notifyObject(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if o, ok := obj.(client.Object); ok {
		n.notify(o.GetName())
	}
}

// condition inspects the cached LogicalVolume of a wait (nil when it does not exist) and reports
// whether the wait is over, or fails it.
type condition func(lv *topolvmv1.LogicalVolume) (bool, error)

// waitFor blocks until cond holds for the cached LogicalVolume name, cond fails, or ctx is done. It
// subscribes before every read, so an event between the read and the wait is never lost.
func (s *Server) waitFor(ctx context.Context, name, what string, cond condition) (*topolvmv1.LogicalVolume, error) {
	start := s.clock.Now()
	for {
		woken, cancel := s.events.subscribe(name)
		lv, err := s.getByName(ctx, name)
		if err != nil {
			cancel()
			return nil, err
		}
		done, err := cond(lv)
		if done || err != nil {
			cancel()
			lvmcsi.PhaseDuration.WithLabelValues("wait-" + what).Observe(s.clock.Since(start).Seconds())
			if err == nil {
				ctrl.LoggerFrom(ctx).V(1).Info("LogicalVolume reached state", "logicalVolume", name,
					"state", what, "waited", s.clock.Since(start))
			}
			return lv, err
		}
		select {
		case <-woken:
		case <-ctx.Done():
			cancel()
			return lv, fmt.Errorf("wait for LogicalVolume %s to be %s: %w", name, what, ctx.Err())
		}
	}
}

// getByName reads a LogicalVolume from the cache; nil when it does not exist.
func (s *Server) getByName(ctx context.Context, name string) (*topolvmv1.LogicalVolume, error) {
	lv := &topolvmv1.LogicalVolume{}
	if err := s.cache.Get(ctx, client.ObjectKey{Name: name}, lv); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get LogicalVolume %s: %w", name, err)
	}
	return lv, nil
}

// getByVolumeID reads the LogicalVolume whose status.volumeID is id from the cache; nil when none.
func (s *Server) getByVolumeID(ctx context.Context, id string) (*topolvmv1.LogicalVolume, error) {
	var list topolvmv1.LogicalVolumeList
	if err := s.cache.List(ctx, &list, client.MatchingFields{IndexVolumeID: id}); err != nil {
		return nil, fmt.Errorf("list LogicalVolumes with volume ID %s: %w", id, err)
	}
	switch len(list.Items) {
	case 0:
		return nil, nil
	case 1:
		return &list.Items[0], nil
	default:
		return nil, fmt.Errorf("%d LogicalVolumes carry volume ID %s", len(list.Items), id)
	}
}

// readByVolumeID finds the LogicalVolume carrying volume ID id by listing them from the API server (no
// index there), or nil when none does.
func (s *Server) readByVolumeID(ctx context.Context, id string) (*topolvmv1.LogicalVolume, error) {
	var list topolvmv1.LogicalVolumeList
	if err := s.api.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list LogicalVolumes from the API server: %w", err)
	}
	for i := range list.Items {
		if slices.Contains(indexVolumeID(&list.Items[i]), id) {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}
