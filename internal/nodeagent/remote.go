package nodeagent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// RemoteLVMD is the node agent's lvmd when lvmd runs outside the agent's process (TopoLVM's "lvmd
// as a systemd service"): LV calls go to it over gRPC, and one capacity Watch stream, opened again
// after it breaks, feeds Capacities and every Watch subscriber of the agent. It implements the
// same interfaces as *lvmd.Service for the LogicalVolume reconciler, the CSI node service, the
// capacity annotations, the metrics and the orphan report. Start runs the stream (a manager
// Runnable).
type RemoteLVMD struct {
	*lvmd.Client

	log logr.Logger
	// retryMin and retryMax bound the wait before the stream is opened again.
	retryMin, retryMax time.Duration

	mu   sync.Mutex
	last []lvmd.Capacity
	have chan struct{} // closed once last is set
	subs map[chan []lvmd.Capacity]struct{}
}

// NewRemoteLVMD returns the agent's view of the lvmd behind c.
func NewRemoteLVMD(c *lvmd.Client, log logr.Logger) *RemoteLVMD {
	return &RemoteLVMD{
		Client: c, log: log, retryMin: 500 * time.Millisecond, retryMax: 30 * time.Second,
		have: make(chan struct{}), subs: map[chan []lvmd.Capacity]struct{}{},
	}
}

// Start follows lvmd's capacity stream until ctx ends. A broken stream (lvmd restarting, say) is
// opened again with a growing wait; capacities already seen stay in place meanwhile.
func (r *RemoteLVMD) Start(ctx context.Context) error {
	wait := r.retryMin
	for ctx.Err() == nil {
		err := r.Watch(ctx, func(caps []lvmd.Capacity) error {
			wait = r.retryMin
			r.publish(caps)
			return nil
		})
		if ctx.Err() != nil {
			break
		}
		r.log.Error(err, "capacity stream of the external lvmd broke; opening it again", "after", wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, r.retryMax)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for ch := range r.subs {
		close(ch)
		delete(r.subs, ch)
	}
	return nil
}

// publish stores caps and hands them to every subscriber; a slow subscriber only gets the newest.
func (r *RemoteLVMD) publish(caps []lvmd.Capacity) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		close(r.have)
	}
	r.last = slices.Clone(caps)
	if r.last == nil {
		r.last = []lvmd.Capacity{}
	}
	for ch := range r.subs {
		sendNewest(ch, r.last)
	}
}

// sendNewest puts caps into ch (capacity 1), replacing a value nobody read yet.
func sendNewest(ch chan []lvmd.Capacity, caps []lvmd.Capacity) {
	select {
	case <-ch:
	default:
	}
	ch <- caps
}

// Capacities returns the newest capacities lvmd reported, waiting for the first report.
func (r *RemoteLVMD) Capacities(ctx context.Context) ([]lvmd.Capacity, error) {
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("capacities of the external lvmd: %w: %w", lvmd.ErrNotReady, ctx.Err())
	case <-r.have:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.last), nil
}

// Subscribe returns a channel that receives the newest capacities at once (once lvmd reported) and
// after each change; it is closed when ctx ends or Start returns. This is *lvmd.Service's Watch.
func (r *RemoteLVMD) Subscribe(ctx context.Context) <-chan []lvmd.Capacity {
	ch := make(chan []lvmd.Capacity, 1)
	r.mu.Lock()
	r.subs[ch] = struct{}{}
	if r.last != nil {
		ch <- r.last
	}
	r.mu.Unlock()
	context.AfterFunc(ctx, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.subs[ch]; ok {
			delete(r.subs, ch)
			close(ch)
		}
	})
	return ch
}
