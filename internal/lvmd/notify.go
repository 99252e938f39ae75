package lvmd

import (
	"context"
	"sync"
)

// notifier hands the latest published value to every subscriber without
// ever blocking the publisher: each subscriber has a one-slot channel, and a
// value a slow subscriber has not taken yet is replaced by the newer one.
type notifier[T any] struct {
	mu    sync.Mutex
	value T
	set   bool
	subs  map[chan T]struct{}
	equal func(a, b T) bool
}

func newNotifier[T any](equal func(a, b T) bool) *notifier[T] {
	return &notifier[T]{subs: map[chan T]struct{}{}, equal: equal}
}

// publish records v and offers it to every subscriber. A value equal to the
// last one is not sent again.
func (n *notifier[T]) publish(v T) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.set && n.equal != nil && n.equal(n.value, v) {
		return
	}
	n.value, n.set = v, true
	for ch := range n.subs {
		offer(ch, v)
	}
}

// offer replaces whatever waits in ch with v. Only publish sends on ch (with
// n.mu held), so after draining there is room.
func offer[T any](ch chan T, v T) {
	select {
	case <-ch:
	default:
	}
	ch <- v
}

// subscribe returns a channel that receives the current value (if any) at
// once and each later one, coalesced. It is closed when ctx ends.
func (n *notifier[T]) subscribe(ctx context.Context) <-chan T {
	ch := make(chan T, 1)
	n.mu.Lock()
	n.subs[ch] = struct{}{}
	if n.set {
		ch <- n.value
	}
	n.mu.Unlock()
	go func() {
		<-ctx.Done()
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.subs, ch)
		close(ch)
	}()
	return ch
}
