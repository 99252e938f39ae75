package lvmd_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvm/lvmtest"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// slowReport is an executor whose next `lvm fullreport` reads the state and
// then waits for proceed before returning it.
type slowReport struct {
	exec.Executor
	reading, proceed chan struct{}
}

func (s *slowReport) Exec(ctx context.Context, c exec.Cmd) error {
	err := s.Executor.Exec(ctx, c)
	if len(c.Args) > 0 && c.Args[0] == "fullreport" && s.reading != nil {
		close(s.reading)
		<-s.proceed
	}
	return err
}

// A state read taken before a create and installed after it must not lose
// the create: changes made during a read are replayed onto its result.
func TestRefreshOverlappingCreateKeepsIt(t *testing.T) {
	e := newEnv(t, testConfig())
	slow := &slowReport{Executor: e.fake}
	svc, err := lvmd.NewService(lvmd.Options{Executor: slow, Classes: e.classes})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, svc.Refresh(t.Context()), nil) // warm
	e.svc = svc
	slow.reading, slow.proceed = make(chan struct{}), make(chan struct{})
	refreshed := make(chan error, 1)
	go func() { refreshed <- svc.Refresh(t.Context()) }()
	<-slow.reading // the read has seen the state without "a"
	slow.reading = nil
	e.create("a", "thin", gib) // warm: no state read, completes now
	close(slow.proceed)
	wantErr(t, <-refreshed, nil)
	if _, err := svc.GetLV(t.Context(), "a", "thin"); err != nil {
		t.Errorf("create lost by the overlapping state read: %v", err)
	}
	if got := e.free("thin"); got != 7*gib {
		t.Errorf("thin free = %d, want 7 GiB", got)
	}
	e.checkNoDrift()
}

// A device class added while Run reads the state for the first time is
// picked up without waiting for the refresh interval.
func TestRunSeesAClassReplacedDuringItsFirstRead(t *testing.T) {
	e := newEnv(t, testConfig())
	slow := &slowReport{Executor: e.fake, reading: make(chan struct{}), proceed: make(chan struct{})}
	svc, err := lvmd.NewService(lvmd.Options{Executor: slow, Classes: e.classes, RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	<-slow.reading // Run's first read has seen the state without vg2
	slow.reading = nil
	e.addFastClass()
	close(slow.proceed)
	got := waitFor(t, svc.Watch(ctx), func(c []lvmd.Capacity) bool { return len(c) == 3 && c[2].Ready })
	if got[2].FreeBytes != 4*gib {
		t.Errorf("new class capacity = %+v", got[2])
	}
	cancel()
	wantErr(t, <-done, nil)
}

// A remove from the VG of a RAID class of an LV the cache has from a state read makes Run read the
// state at once: a read lists no RAID images, so the cache cannot tell which PVs the freed extents
// went back to, and RAID capacity depends on them.
func TestRunReadsStateAfterRemoveInRAIDVG(t *testing.T) {
	e := newEnv(t, mirrorConfig())
	e.create("m", "mirror", gib)
	wantErr(t, e.svc.Refresh(t.Context()), nil) // now m is known from a read
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.svc.Run(ctx) }()
	waitCount(t, e.fake, 2)
	wantErr(t, e.svc.RemoveLV(t.Context(), "m", "mirror"), nil)
	waitCount(t, e.fake, 3)
	cancel()
	wantErr(t, <-done, nil)
}

// Of a RAID LV lvmd made itself, the cache knows the PVs (its images are in the cache): removing it
// leaves the cached capacity exact, with no state read.
func TestRemoveOwnRAIDLVKeepsCapacityExact(t *testing.T) {
	e := newEnv(t, mirrorConfig())
	before := e.free("mirror")
	e.create("m", "mirror", gib)
	e.create("l", "thick", gib)
	wantErr(t, e.svc.RemoveLV(t.Context(), "m", "mirror"), nil)
	if n := e.fake.Count("fullreport"); n != 0 {
		t.Errorf("%d state reads, want 0", n)
	}
	if e.free("mirror") >= before {
		t.Errorf("mirror capacity %d after a thick create, want below %d", e.free("mirror"), before)
	}
	e.checkNoDrift()
}

func mirrorConfig() *lvmd.Config {
	cfg := testConfig()
	cfg.DeviceClasses = append(cfg.DeviceClasses, lvmd.DeviceClass{
		Name: "mirror", VolumeGroup: "vg", SpareGB: ptr(uint64(0)),
		RAID: &lvmd.RAIDConfig{Type: lvm.RAID1, Mirrors: 1},
	})
	return cfg
}

// waitCount waits until the fake has run n state reads.
func waitCount(t *testing.T, f *lvmtest.LVM, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.Count("fullreport") < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d state reads, want %d", f.Count("fullreport"), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The volume-group manager feeds the same classes after every reconcile: only classes that
// differ, or MarkStale (a volume group changed behind the cache), cost a state read.
func TestRunReadsStateOnlyForNewClassesOrWhenMarkedStale(t *testing.T) {
	e := newEnv(t, testConfig())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.svc.Run(ctx) }()
	waitCount(t, e.fake, 1)
	for range 3 {
		wantErr(t, e.classes.Replace(testConfig()), nil)
	}
	e.svc.MarkStale()
	waitCount(t, e.fake, 2)
	e.addFastClass()
	waitCount(t, e.fake, 3)
	// Run is idle again: a read the equal feeds had asked for would have come by now.
	time.Sleep(200 * time.Millisecond)
	if n := e.fake.Count("fullreport"); n != 3 {
		t.Errorf("%d state reads, want 3 (first, MarkStale, new class)", n)
	}
	cancel()
	wantErr(t, <-done, nil)
}

// heldCreate is an executor whose lvcreate waits for release once it has said so on creating; it
// counts the full state reads.
type heldCreate struct {
	exec.Executor
	creating, release chan struct{}
	reads             atomic.Int32
}

func (h *heldCreate) Exec(ctx context.Context, c exec.Cmd) error {
	if len(c.Args) > 0 {
		switch c.Args[0] {
		case "fullreport":
			h.reads.Add(1)
		case "lvcreate":
			close(h.creating)
			<-h.release
		}
	}
	return h.Executor.Exec(ctx, c)
}

// runHeld runs a service over heldCreate with a short refresh interval, starts a create that is
// held in its lvcreate, and returns the executor and the create's result.
func runHeld(t *testing.T, deferLimit time.Duration) (*heldCreate, <-chan error) {
	t.Helper()
	e := newEnv(t, testConfig())
	h := &heldCreate{Executor: e.fake, creating: make(chan struct{}), release: make(chan struct{})}
	svc, err := lvmd.NewService(lvmd.Options{Executor: h, Classes: e.classes,
		RefreshInterval: 10 * time.Millisecond, RefreshDeferLimit: deferLimit})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); wantErr(t, <-ran, nil) })
	eventuallyReads(t, h, 3) // the first read, then periodic ones
	created := make(chan error, 1)
	go func() {
		_, err := svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "a", DeviceClass: "thin", Size: gib})
		created <- err
	}()
	<-h.creating
	return h, created
}

// eventuallyReads waits until the executor has seen at least n full state reads.
func eventuallyReads(t *testing.T, h *heldCreate, n int32) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for h.reads.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d full state reads after 30 s, want %d", h.reads.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The periodic state read does not run while an LV call is in flight (it would hold the volume
// group's lock that the lvcreates of a burst wait for); it runs once the call has ended.
func TestPeriodicReadWaitsForCallsInFlight(t *testing.T) {
	h, created := runHeld(t, time.Hour)
	before := h.reads.Load()
	time.Sleep(300 * time.Millisecond) // 30 refresh intervals
	if got := h.reads.Load(); got != before {
		t.Errorf("%d full state reads while an lvcreate ran, want none", got-before)
	}
	close(h.release)
	wantErr(t, <-created, nil)
	eventuallyReads(t, h, before+1)
}

// A periodic state read waits for the calls in flight no longer than the defer limit.
func TestPeriodicReadWaitsNoLongerThanTheLimit(t *testing.T) {
	h, created := runHeld(t, 50*time.Millisecond)
	eventuallyReads(t, h, h.reads.Load()+1)
	close(h.release)
	wantErr(t, <-created, nil)
}
