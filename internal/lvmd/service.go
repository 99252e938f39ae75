package lvmd

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// DefaultRefreshInterval is how often Run re-reads the full LVM state when
// Options.RefreshInterval is zero.
const DefaultRefreshInterval = 10 * time.Minute

// Options configure a Service.
type Options struct {
	// Executor runs lvm (through the lvm client) and the commands that zero and copy LVs; required.
	Executor exec.Executor
	// LVMConfig is configuration every lvm2 command runs with (the kubelet loop devices' filter,
	// devices.LoopFilter.Config); nil for none.
	LVMConfig lvm.ConfigFunc
	// Classes holds the device classes; required.
	Classes *DeviceClassManager
	// RefreshInterval is the period of Run's full state read (default
	// DefaultRefreshInterval).
	RefreshInterval time.Duration
	// RefreshDeferLimit bounds how long a periodic state read waits for the LV calls in flight
	// to end (default: RefreshInterval). A full read takes the volume group's lock for as long as
	// it runs, seconds on a busy node, and every lvcreate of a burst would wait behind it; the
	// cache follows every change made through the service, so nothing needs the read then.
	RefreshDeferLimit time.Duration
	// Identity tags every LV created, and a VG tagged for another node or
	// cluster is not served (zero: no identity tags, no check).
	Identity lvm.Identity
	// ChunkBytes is how many bytes one zeroing or copying command handles
	// (default DefaultChunkBytes; chunks.go).
	ChunkBytes uint64
}

// Service is the LV service. Its methods are safe for concurrent use; calls
// for the same LV are serialized, calls for different LVs run in parallel
// (lvm2 serializes them per VG itself).
type Service struct {
	exec     exec.Executor
	chunk    uint64
	lvm      *lvm.Client
	classes  *DeviceClassManager
	interval time.Duration
	deferMax time.Duration
	locks    *keyedMutex
	watch    *notifier[[]Capacity]
	removes  *removeBatcher
	// stale asks Run for a state read: a remove returned extents to PVs the cache
	// cannot name, and RAID capacity is computed from the PVs (raidcap.go), or
	// the volume-group manager changed a volume group (MarkStale).
	stale chan struct{}

	// refreshMu serializes full state reads.
	refreshMu sync.Mutex

	// mu guards the fields below; it is never held across a command.
	mu    sync.Mutex
	state *lvm.State
	res   pending
	// journal records the cache changes applied while a full state read is
	// running (refreshing > 0); they are replayed onto the new state, since
	// the read may have been taken before they happened.
	refreshing int
	journal    []lvm.Op
}

// NewService returns a Service. It reads no state until the first call that
// needs it, Refresh or Run.
func NewService(o Options) (*Service, error) {
	if o.Executor == nil || o.Classes == nil {
		return nil, fmt.Errorf("new lvmd service: %w: executor and device classes are required", ErrInvalidArgument)
	}
	if err := o.Identity.Validate(); err != nil {
		return nil, fmt.Errorf("new lvmd service: %w: %w", ErrInvalidArgument, err)
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.RefreshDeferLimit <= 0 {
		o.RefreshDeferLimit = o.RefreshInterval
	}
	if o.ChunkBytes == 0 {
		o.ChunkBytes = DefaultChunkBytes
	}
	if o.ChunkBytes%sectorBytes != 0 {
		return nil, fmt.Errorf("new lvmd service: %w: chunk size %d is not a multiple of %d bytes",
			ErrInvalidArgument, o.ChunkBytes, sectorBytes)
	}
	return &Service{
		exec:     o.Executor,
		chunk:    o.ChunkBytes,
		lvm:      lvm.New(o.Executor).WithIdentity(o.Identity).WithConfig(o.LVMConfig),
		classes:  o.Classes,
		interval: o.RefreshInterval,
		deferMax: o.RefreshDeferLimit,
		locks:    newKeyedMutex(),
		watch:    newNotifier(capacitiesEqual),
		removes:  newRemoveBatcher(),
		res:      newPending(),
		stale:    make(chan struct{}, 1),
	}, nil
}

// Classes returns the service's device class manager.
func (s *Service) Classes() *DeviceClassManager { return s.classes }

// idleCheck is how often a deferred periodic read checks whether the LV calls have ended.
const idleCheck = 250 * time.Millisecond

// Run reads the state, then keeps it fresh until ctx ends: every refresh
// interval, whenever the device classes are replaced, after a remove from the VG
// of a RAID class (markPVsStale) and when asked (MarkStale). The periodic read
// waits while LV calls are in flight (a burst of creates), for at most the
// defer limit. Refresh failures are logged (logger from ctx) and retried on the
// next tick. It returns the error of the first read, or nil when ctx ends.
func (s *Service) Run(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx)
	// Subscribe before the first Refresh: a replace that lands in between
	// is then a second event, never a lost one.
	classes := s.classes.Watch(ctx)
	<-classes // the current configuration, which Refresh reads itself
	if err := s.Refresh(ctx); err != nil {
		return err
	}
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	var retry <-chan time.Time // while a periodic read waits for the LV calls in flight
	var due time.Time          // when that read was due
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-classes:
			if !ok {
				return nil
			}
			log.V(1).Info("Device classes replaced, reading LVM state")
			s.publish()
		case <-s.stale:
			log.V(1).Info("Volume groups changed behind the cache, reading LVM state")
		case now := <-tick.C:
			if retry != nil {
				continue // a deferred read is pending already
			}
			if due = now; s.locks.busy() {
				retry = time.After(idleCheck)
				continue
			}
		case now := <-retry:
			if s.locks.busy() && now.Sub(due) < s.deferMax {
				retry = time.After(idleCheck)
				continue
			}
		}
		retry = nil
		if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Reading LVM state failed")
		}
	}
}

// MarkStale asks Run to read the state soon: a volume group changed behind the
// cache (the volume-group manager created or grew it, or its thin pool). It
// never blocks; requests made before the read begins are served by one read.
func (s *Service) MarkStale() {
	select {
	case s.stale <- struct{}{}:
	default:
	}
}

// markPVsStale asks Run to read the state when VG vg serves a RAID class: the remove
// that freed extents in it could not tell the cache which PVs they went back to (an LV of
// a state read, whose sub-LVs the read does not list), so the class's capacity stays low
// (never high) until the next read.
func (s *Service) markPVsStale(vg string) {
	for _, dc := range s.classes.Config().DeviceClasses {
		if dc.VolumeGroup == vg && dc.RAID != nil {
			s.MarkStale()
			return
		}
	}
}

// Refresh reads the full LVM state with one `lvm fullreport`, replaces the
// cache and publishes capacities.
func (s *Service) Refresh(ctx context.Context) error {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	s.mu.Lock()
	s.refreshing++
	s.mu.Unlock()

	st, err := s.lvm.State(ctx)

	s.mu.Lock()
	s.refreshing--
	journal := s.journal
	if s.refreshing == 0 {
		s.journal = nil
	}
	if err == nil {
		for _, op := range journal {
			// The read may show the change already; the model then refuses it, and nothing is lost.
			_ = st.Apply(op)
		}
		s.state = st
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("refresh: %w", lvmError(err))
	}
	s.publish()
	return nil
}

// ensureState reads the state if it has never been read.
func (s *Service) ensureState(ctx context.Context) error {
	s.mu.Lock()
	loaded := s.state != nil
	s.mu.Unlock()
	if loaded {
		return nil
	}
	return s.Refresh(ctx)
}

// apply applies op, an lvm2 command that succeeded, to the cached state and publishes capacities.
func (s *Service) apply(op lvm.Op) {
	s.applyReleasing(nil, op)
}

// applyReleasing drops c's reservation (c may be nil) and applies op to the cached state in one
// critical section, then publishes capacities. Releasing first and applying later would let a
// create in between see neither the reservation nor the LV, and take the same capacity again.
// When the model refuses what lvm2 did, the state is read again soon (Run).
func (s *Service) applyReleasing(c *change, op lvm.Op) {
	s.mu.Lock()
	if c != nil {
		s.releaseLocked(c)
	}
	var err error
	if s.state != nil {
		err = s.state.Apply(op)
	}
	if s.refreshing > 0 {
		s.journal = append(s.journal, op)
	}
	s.mu.Unlock()
	if err != nil {
		s.MarkStale()
	}
	s.publish()
}

// refreshAfterFailure re-reads the state after a failed change, so the cache
// follows whatever lvm2 did. Its own failure is joined to the change's.
func (s *Service) refreshAfterFailure(ctx context.Context, err error) error {
	if rerr := s.Refresh(context.WithoutCancel(ctx)); rerr != nil {
		return fmt.Errorf("%w (and %w)", err, rerr)
	}
	return err
}

// Capacities returns the capacity of every device class from the cache.
func (s *Service) Capacities(ctx context.Context) ([]Capacity, error) {
	if err := s.ensureState(ctx); err != nil {
		return nil, err
	}
	return s.capacities(), nil
}

// Capacity returns the capacity of device class name ("" = default).
func (s *Service) Capacity(ctx context.Context, name string) (Capacity, error) {
	dc, err := s.classes.DeviceClass(name)
	if err != nil {
		return Capacity{}, err
	}
	if err := s.ensureState(ctx); err != nil {
		return Capacity{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return classCapacity(&dc, s.state, s.res, s.lvm.Identity()), nil
}

func (s *Service) capacities() []Capacity {
	cfg := s.classes.Config()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Capacity, 0, len(cfg.DeviceClasses))
	for i := range cfg.DeviceClasses {
		out = append(out, classCapacity(&cfg.DeviceClasses[i], s.state, s.res, s.lvm.Identity()))
	}
	return out
}

// publish sends the current capacities to watchers (if they changed).
func (s *Service) publish() {
	s.watch.publish(s.capacities())
}

// Watch returns a channel receiving the capacities of all device classes:
// the current ones at once (after the first state read), then new ones after
// each change. A slow reader only gets the newest. The channel is closed when
// ctx ends.
func (s *Service) Watch(ctx context.Context) <-chan []Capacity {
	return s.watch.subscribe(ctx)
}

// keyedMutex serializes work per key (LV).
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedEntry
}

type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

func newKeyedMutex() *keyedMutex { return &keyedMutex{locks: map[string]*keyedEntry{}} }

// busy reports whether a key is locked or waited for.
func (k *keyedMutex) busy() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.locks) > 0
}

// lock locks key and returns its unlock function.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	e := k.locks[key]
	if e == nil {
		e = &keyedEntry{}
		k.locks[key] = e
	}
	e.refs++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		defer k.mu.Unlock()
		if e.refs--; e.refs == 0 {
			delete(k.locks, key)
		}
	}
}
