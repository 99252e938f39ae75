package lvmd_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvm/lvmtest"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// holdFirstRemove runs commands on the fake, but the first lvremove waits until release is closed;
// held is closed when it starts waiting.
type holdFirstRemove struct {
	exec.Executor
	once    sync.Once
	held    chan struct{}
	release chan struct{}
}

func (h *holdFirstRemove) Exec(ctx context.Context, c exec.Cmd) error {
	if c.Name == "lvm" && len(c.Args) > 0 && c.Args[0] == "lvremove" {
		first := false
		h.once.Do(func() { first = true })
		if first {
			close(h.held)
			<-h.release
		}
	}
	return h.Executor.Exec(ctx, c)
}

func newHold(e exec.Executor) *holdFirstRemove {
	return &holdFirstRemove{Executor: e, held: make(chan struct{}), release: make(chan struct{})}
}

// newHeldEnv is newEnv with thin LVs names created, where the first lvremove waits for release.
func newHeldEnv(t *testing.T, names ...string) (*env, *holdFirstRemove) {
	t.Helper()
	e := newEnv(t, testConfig())
	for _, n := range names {
		e.create(n, "thin", gib)
	}
	h := newHold(e.fake)
	svc, err := lvmd.NewService(lvmd.Options{Executor: h, Classes: e.classes, RefreshInterval: time.Hour})
	wantErr(t, err, nil)
	wantErr(t, svc.Refresh(t.Context()), nil)
	e.svc = svc
	e.fake.Reset()
	return e, h
}

// removeAll removes each of names in its own goroutine once the previous removal of the VG is held
// and the others queued behind it, then lets the held one go; it returns each removal's error.
func removeAll(t *testing.T, e *env, h *holdFirstRemove, names ...string) map[string]error {
	t.Helper()
	classes := map[string]string{}
	for _, n := range names {
		classes[n] = "thin"
	}
	return removeTogether(t, e.svc, h, "vg", classes, names...)
}

// removeTogether is removeAll for any service and VG; classes maps each LV to its device class.
func removeTogether(
	t *testing.T, svc *lvmd.Service, h *holdFirstRemove, vg string, classes map[string]string, names ...string,
) map[string]error {
	t.Helper()
	var mu sync.Mutex
	errs := map[string]error{}
	var wg sync.WaitGroup
	remove := func(n string) {
		wg.Go(func() {
			err := svc.RemoveLV(t.Context(), n, classes[n])
			mu.Lock()
			errs[n] = err
			mu.Unlock()
		})
	}
	remove(names[0])
	<-h.held
	for _, n := range names[1:] {
		remove(n)
	}
	eventually(t, func() bool { return svc.QueuedRemoves(vg) == len(names)-1 }, "the removals to queue")
	close(h.release)
	wg.Wait()
	return errs
}

func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// lvremoves returns the LV arguments of every lvremove the fake ran, one sorted list per command.
func lvremoves(f *lvmtest.LVM) [][]string {
	var out [][]string
	for _, c := range f.Calls() {
		fields := strings.Fields(c)
		if len(fields) < 2 || fields[0] != "lvm" || fields[1] != "lvremove" {
			continue
		}
		var lvs []string
		for _, a := range fields[2:] {
			if !strings.HasPrefix(a, "-") {
				lvs = append(lvs, a)
			}
		}
		slices.Sort(lvs)
		out = append(out, lvs)
	}
	return out
}

func TestRemovesQueuedBehindOneRunTogether(t *testing.T) {
	e, h := newHeldEnv(t, "a", "b", "c", "d")
	thin := e.free("thin")
	errs := removeAll(t, e, h, "a", "b", "c", "d")
	for n, err := range errs {
		if err != nil {
			t.Errorf("RemoveLV(%s) = %v", n, err)
		}
	}
	got := lvremoves(e.fake)
	want := [][]string{{"vg/a"}, {"vg/b", "vg/c", "vg/d"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("lvremove commands = %v, want %v (all calls %v)", got, want, e.fake.Calls())
	}
	if n := e.fake.Count("fullreport"); n != 0 {
		t.Errorf("%d state reads; removals that succeed need none", n)
	}
	lvs, err := e.svc.ListLVs(t.Context(), "thin")
	if err != nil || len(lvs) != 0 {
		t.Errorf("ListLVs = %v, %v; want none", lvs, err)
	}
	if e.free("thin") != thin+4*gib {
		t.Errorf("thin free %d, want %d", e.free("thin"), thin+4*gib)
	}
	e.checkNoDrift()
}

func TestBatchFailureAnswersEachRemovalAlone(t *testing.T) {
	e, h := newHeldEnv(t, "a", "b", "c", "d")
	e.fake.SetOpen("vg", "c", true)
	errs := removeAll(t, e, h, "a", "b", "c", "d")
	for _, n := range []string{"a", "b", "d"} {
		if errs[n] != nil {
			t.Errorf("RemoveLV(%s) = %v, want nil", n, errs[n])
		}
	}
	if !errorsIs(errs["c"], lvmd.ErrInUse) {
		t.Errorf("RemoveLV(c) = %v, want %v", errs["c"], lvmd.ErrInUse)
	}
	// The shared command removed b and d and failed on c; each is then removed alone: b and d are
	// not found (removed), c fails again.
	got := lvremoves(e.fake)
	want := [][]string{{"vg/a"}, {"vg/b", "vg/c", "vg/d"}}
	if len(got) != 5 || !slices.EqualFunc(got[:2], want, slices.Equal) {
		t.Errorf("lvremove commands = %v, want %v and one per LV of the batch", got, want)
	}
	lvs, err := e.svc.ListLVs(t.Context(), "thin")
	if err != nil || len(lvs) != 1 || lvs[0].Name != "c" {
		t.Errorf("ListLVs = %v, %v; want c only", lvs, err)
	}
	e.checkNoDrift()
}

func TestRemovalOutlivesItsCaller(t *testing.T) {
	e, h := newHeldEnv(t, "a", "b")
	var wg sync.WaitGroup
	var errA, errB error
	wg.Go(func() { errA = e.svc.RemoveLV(t.Context(), "a", "thin") })
	<-h.held
	ctx, cancel := context.WithCancel(t.Context())
	wg.Go(func() { errB = e.svc.RemoveLV(ctx, "b", "thin") })
	eventually(t, func() bool { return e.svc.QueuedRemoves("vg") == 1 }, "b to queue")
	cancel()
	eventually(t, func() bool { return ctx.Err() != nil }, "the cancel")
	time.Sleep(10 * time.Millisecond) // b's caller returns
	close(h.release)
	wg.Wait()
	if errA != nil || !errorsIs(errB, context.Canceled) {
		t.Errorf("errors a %v, b %v; want a nil, b canceled", errA, errB)
	}
	// b's caller left, but its removal was queued: it runs, and the cache follows.
	eventually(t, func() bool {
		lvs, err := e.svc.ListLVs(t.Context(), "thin")
		return err == nil && len(lvs) == 0
	}, "b to be removed and dropped from the cache")
	if got := lvremoves(e.fake); len(got) != 2 || !slices.Equal(got[1], []string{"vg/b"}) {
		t.Errorf("lvremove commands = %v, want vg/a then vg/b", got)
	}
	e.checkNoDrift()
}

// Every lvm2 command lvmd runs that changes a VG bounds the VG's metadata archive (lvm.ArchiveKeep).
func TestEveryChangeBoundsTheArchive(t *testing.T) {
	e := newEnv(t, testConfig())
	ctx := t.Context()
	e.create("a", "thick", gib)
	e.create("b", "thin", gib)
	_, err := e.svc.CreateSnapshot(
		ctx,
		lvmd.SnapshotRequest{Name: "s", DeviceClass: "thin", Source: "b", ReadOnly: true},
	)
	wantErr(t, err, nil)
	_, err = e.svc.ResizeLV(ctx, "b", "thin", 2*gib)
	wantErr(t, err, nil)
	for _, n := range []string{"a", "s", "b"} {
		class := "thin"
		if n == "a" {
			class = "thick"
		}
		wantErr(t, e.svc.RemoveLV(ctx, n, class), nil)
	}
	bound := fmt.Sprintf(`--config "backup { retain_min = %d retain_days = 0 }"`, lvm.ArchiveKeep)
	changes := 0
	for _, c := range e.fake.RawCalls() {
		if !strings.HasPrefix(c, "lvm ") || strings.HasPrefix(c, "lvm fullreport") {
			continue
		}
		changes++
		if !strings.Contains(c, bound) {
			t.Errorf("%q does not bound the archive (%s)", c, bound)
		}
	}
	if changes != 7 {
		t.Errorf(
			"%d lvm2 changes, want 7 (2 creates, a snapshot, an extend, 3 removes): %q",
			changes,
			e.fake.RawCalls(),
		)
	}
}
