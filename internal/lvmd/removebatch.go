package lvmd

import (
	"context"
	"sync"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// maxRemoveBatch bounds the LVs one lvremove removes.
const maxRemoveBatch = 32

// removeBatcher runs the removals of one VG as few lvremove commands: a removal asked for while
// another lvremove of the VG runs waits for it, and all that waited then go in the next command.
// A lone removal runs at once, so it costs no more than before. Every lvm2 command of a VG scans
// the devices, waits for the VG's lock and reads its whole metadata; one lvremove of several LVs
// does that once (measured in a UML guest with 300 thin LVs: 1.1 s for one, 5.9 s for ten; thick
// 0.63 s for one, 0.72 s for five). It matters when many volumes are deleted at once.
type removeBatcher struct {
	mu      sync.Mutex
	running map[string]bool          // VG name → a drain goroutine runs
	queue   map[string][]*removeWait // VG name → removals not started
}

// removeWait is one removal in a batch.
type removeWait struct {
	name string
	// removed runs once the LV is gone (before done is sent), whether or not its caller still
	// waits, so the cache never keeps an LV lvm2 has removed.
	removed func()
	done    chan error
}

func newRemoveBatcher() *removeBatcher {
	return &removeBatcher{running: map[string]bool{}, queue: map[string][]*removeWait{}}
}

// removeLV removes LV name of vg with the other removals of vg asked for meanwhile, runs removed
// when it is gone, and returns its own result: when the shared lvremove fails, each LV of the
// batch is removed again on its own, so an error is always the error of this LV alone. The
// command outlives ctx: a caller that gives up does not cancel the others' removal.
func (s *Service) removeLV(ctx context.Context, vg lvm.VG, name string, removed func()) error {
	w := &removeWait{name: name, removed: removed, done: make(chan error, 1)}
	b := s.removes
	b.mu.Lock()
	b.queue[vg.Name] = append(b.queue[vg.Name], w)
	if !b.running[vg.Name] {
		b.running[vg.Name] = true
		go s.drainRemoves(context.WithoutCancel(ctx), vg)
	}
	b.mu.Unlock()
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drainRemoves runs the queued removals of vg, a batch at a time, until none is left.
func (s *Service) drainRemoves(ctx context.Context, vg lvm.VG) {
	for {
		batch := s.removes.take(vg.Name)
		if len(batch) == 0 {
			return
		}
		s.runRemoveBatch(ctx, vg, batch)
	}
}

// take returns up to maxRemoveBatch queued removals of vg; none (and the drain ends) when the
// queue is empty.
func (b *removeBatcher) take(vg string) []*removeWait {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queue[vg]
	if len(q) == 0 {
		delete(b.queue, vg)
		delete(b.running, vg)
		return nil
	}
	n := min(len(q), maxRemoveBatch)
	batch := q[:n:n]
	b.queue[vg] = q[n:]
	return batch
}

// runRemoveBatch removes the batch's LVs with one lvremove; when that fails, with one each.
func (s *Service) runRemoveBatch(ctx context.Context, vg lvm.VG, batch []*removeWait) {
	finish := func(w *removeWait, err error) {
		if err == nil && w.removed != nil {
			w.removed()
		}
		w.done <- err
	}
	names := make([]string, len(batch))
	for i, w := range batch {
		names[i] = w.name
	}
	err := s.lvm.RemoveLVs(ctx, vg, names)
	if err == nil || len(batch) == 1 {
		for _, w := range batch {
			finish(w, err)
		}
		return
	}
	// The shared command went on past the LV it could not remove, so most of the batch is
	// likely gone: an LV that is not found now was removed by it.
	for _, w := range batch {
		err := s.lvm.RemoveLV(ctx, vg, w.name)
		if lvm.IsNotFound(err) {
			err = nil
		}
		finish(w, err)
	}
}
