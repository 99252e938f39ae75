package logicalvolume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

func TestCreate(t *testing.T) {
	tests := []struct {
		name     string
		lv       *topolvmv1.LogicalVolume
		setup    func(e *env) // e.g. the source LV
		wantSize int64
		wantVG   string
		wantArgs []string // in the lvcreate command line
	}{
		{name: "thick", lv: newLV("a"), wantSize: gib, wantArgs: []string{"-L"}},
		{name: "thick, rounded up to whole extents", lv: newLV("a", size(gib+1)), wantSize: gib + extent},
		{name: "default class", lv: newLV("a", class("")), wantSize: gib},
		{name: "thin", lv: newLV("a", class("thin")), wantSize: gib, wantArgs: []string{"--thinpool pool"}},
		{name: "lvcreate option class", lv: newLV("a", optionClass("striped")), wantSize: gib,
			wantArgs: []string{"--alloc anywhere"}},
		{
			name:     "snapshot (ro) of a thin LV",
			lv:       newLV("snap", class("thin"), source("uid-src", topolvmv1.AccessTypeReadOnly)),
			setup:    createSource,
			wantSize: gib,
			wantArgs: []string{"-s", "uid-src", "-p r"},
		},
		{name: "clone (rw) of a thin LV, grown to the larger request",
			lv:    newLV("clone", class("thin"), size(2*gib), source("uid-src", topolvmv1.AccessTypeReadWrite)),
			setup: createSource, wantSize: 2 * gib, wantArgs: []string{"-s", "uid-src"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.lv)
			if tt.setup != nil {
				tt.setup(e)
			}
			e.fake.Reset()
			e.mustReconcile(tt.lv.Name)

			got := e.get(tt.lv.Name)
			if got.Status.VolumeID != string(tt.lv.UID) {
				t.Errorf("volumeID = %q, want the UID %q", got.Status.VolumeID, tt.lv.UID)
			}
			if currentSize(got) != tt.wantSize {
				t.Errorf("currentSize = %d, want %d", currentSize(got), tt.wantSize)
			}
			checkHealthy(t, got)
			creates := slices.DeleteFunc(
				e.fake.Calls(),
				func(c string) bool { return !strings.Contains(c, "lvcreate") },
			)
			if len(creates) != 1 {
				t.Fatalf("lvcreate ran %d times, want once: %v", len(creates), e.fake.Calls())
			}
			for _, a := range tt.wantArgs {
				if !strings.Contains(creates[0], a) {
					t.Errorf("lvcreate %q lacks %q", creates[0], a)
				}
			}
			lv, err := e.svc.GetLV(t.Context(), got.Status.VolumeID, tt.lv.Spec.DeviceClass)
			if err != nil || int64(lv.Size) != tt.wantSize {
				t.Errorf("lvmd has LV %+v (err %v), want size %d", lv, err, tt.wantSize)
			}
		})
	}
}

// createSource makes the thin source LV "uid-src" of 1 GiB.
func createSource(e *env) {
	src := newLV("src", class("thin"))
	if err := e.client.Create(e.t.Context(), src); err != nil {
		e.t.Fatal(err)
	}
	e.mustReconcile("src")
}

// checkHealthy asserts a successful reconcile's status: no code, Created and Resized True at the
// current generation, observedGeneration current, the finalizer set.
func checkHealthy(t *testing.T, lv *topolvmv1.LogicalVolume) {
	t.Helper()
	if lv.Status.Code != 0 || lv.Status.Message != "" {
		t.Errorf("code %d message %q, want none", lv.Status.Code, lv.Status.Message)
	}
	for _, typ := range []string{topolvmv1.ConditionCreated, topolvmv1.ConditionResized} {
		c := condition(lv, typ)
		if c.Status != metav1.ConditionTrue || c.ObservedGeneration != lv.Generation {
			t.Errorf("condition %s = %+v, want True at generation %d", typ, c, lv.Generation)
		}
	}
	if lv.Status.ObservedGeneration != lv.Generation {
		t.Errorf("observedGeneration %d, want %d", lv.Status.ObservedGeneration, lv.Generation)
	}
	if !slices.Contains(lv.Finalizers, Finalizer) {
		t.Errorf("finalizers %v lack %s", lv.Finalizers, Finalizer)
	}
}

func TestCreateFailures(t *testing.T) {
	tests := []struct {
		name         string
		lv           *topolvmv1.LogicalVolume
		setup        func(e *env)
		wantCode     codes.Code
		wantReason   string
		wantTerminal bool
	}{
		{name: "no space", lv: newLV("a", size(20*gib)),
			wantCode: codes.ResourceExhausted, wantReason: lvmd.ConditionInsufficientCapacity},
		{name: "no overprovisioned thin space", lv: newLV("a", class("thin"), size(9*gib)),
			wantCode: codes.ResourceExhausted, wantReason: lvmd.ConditionInsufficientCapacity},
		{name: "unknown device class", lv: newLV("a", class("nope")),
			wantCode: codes.InvalidArgument, wantReason: lvmd.ConditionDeviceClassNotFound, wantTerminal: true},
		{name: "unknown option class", lv: newLV("a", optionClass("nope")),
			wantCode: codes.InvalidArgument, wantReason: lvmd.ConditionInvalidArgument, wantTerminal: true},
		{name: "volume group not there yet", lv: newLV("a", class("missing")),
			wantCode: codes.Unavailable, wantReason: lvmd.ConditionDeviceClassNotReady},
		{
			name:         "snapshot source not found",
			lv:           newLV("a", class("thin"), source("uid-nope", topolvmv1.AccessTypeReadOnly)),
			wantCode:     codes.NotFound,
			wantReason:   ReasonSourceNotFound,
			wantTerminal: true,
		},
		{name: "foreign LV of the same name", lv: newLV("a"),
			setup:    func(e *env) { e.fake.AddLV("vg", "uid-a", uint64(gib)) },
			wantCode: codes.FailedPrecondition, wantReason: lvmd.ConditionNotOwned, wantTerminal: true},
		{name: "lvcreate fails", lv: newLV("a"),
			setup:    func(e *env) { e.fake.FailNext("lvcreate", 5, "  Internal error: something broke\n") },
			wantCode: codes.Internal, wantReason: lvmd.ConditionFailed},
		{name: "recorded LV vanished is not created again", lv: newLV("a", volumeID("uid-a")),
			wantCode: codes.NotFound, wantReason: lvmd.ConditionNotFound, wantTerminal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.lv)
			if tt.setup != nil {
				tt.setup(e)
			}
			err := e.reconcile(tt.lv.Name)
			if err == nil || isTerminal(err) != tt.wantTerminal {
				t.Fatalf("reconcile error %v (terminal %v), want terminal=%v", err, isTerminal(err), tt.wantTerminal)
			}
			got := e.get(tt.lv.Name)
			if codes.Code(got.Status.Code) != tt.wantCode || got.Status.Message == "" {
				t.Errorf(
					"code %v message %q, want %v with a message",
					codes.Code(got.Status.Code),
					got.Status.Message,
					tt.wantCode,
				)
			}
			c := condition(got, topolvmv1.ConditionCreated)
			if c.Status != metav1.ConditionFalse || c.Reason != tt.wantReason || c.ObservedGeneration != 1 {
				t.Errorf("Created = %+v, want False/%s at generation 1", c, tt.wantReason)
			}
			if got.Status.VolumeID != tt.lv.Status.VolumeID || got.Status.ObservedGeneration != 0 {
				t.Errorf(
					"volumeID %q observedGeneration %d changed by a failure",
					got.Status.VolumeID,
					got.Status.ObservedGeneration,
				)
			}
			if n := e.fake.Count("lvcreate"); tt.wantCode != codes.Internal && n != 0 {
				t.Errorf("lvcreate ran %d times", n)
			}
		})
	}
}

// TestFailureClearsOnSuccess: a retry that succeeds removes code, message and the False condition.
func TestFailureClearsOnSuccess(t *testing.T) {
	e := newEnv(t, newLV("a"))
	e.fake.FailNext("lvcreate", 5, "  Internal error: something broke\n")
	if err := e.reconcile("a"); err == nil {
		t.Fatal("want the injected failure")
	}
	e.mustReconcile("a")
	checkHealthy(t, e.get("a"))
}

// TestRestartDoesNotDuplicate: an agent that dies after lvcreate and before writing the status (here:
// the status write fails) leaves an LV; a new agent with a new lvmd on the same LVM finds and records
// it instead of creating a second one.
func TestRestartDoesNotDuplicate(t *testing.T) {
	f := newFakeLVM()
	obj := newLV("a", class("thin"))
	failStatus := &interceptor.Funcs{
		SubResourceApply: func(context.Context, client.Client, string, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
			return errors.New("connection lost")
		},
	}
	first := newEnvOn(t, f, newClient(t, failStatus, obj))
	if err := first.reconcile("a"); err == nil {
		t.Fatal("want the status write to fail")
	}
	if n := f.Count("lvcreate"); n != 1 {
		t.Fatalf("first agent ran lvcreate %d times", n)
	}
	var inAPI topolvmv1.LogicalVolume
	if err := first.client.Get(t.Context(), types.NamespacedName{Name: "a"}, &inAPI); err != nil {
		t.Fatal(err)
	}

	f.Reset()
	second := newEnvOn(t, f, newClient(t, nil, &inAPI))
	second.mustReconcile("a")
	second.mustReconcile("a")
	if n := f.Count("lvcreate"); n != 0 {
		t.Errorf("restarted agent ran lvcreate %d times: %v", n, f.Calls())
	}
	got := second.get("a")
	if got.Status.VolumeID != "uid-a" || currentSize(got) != gib {
		t.Errorf("status %+v, want the existing LV uid-a of 1 GiB", got.Status)
	}
	checkHealthy(t, got)
	lvs, err := second.svc.ListLVs(t.Context(), "thin")
	if err != nil || len(lvs) != 1 {
		t.Errorf("LVs %v (%v), want exactly one", lvs, err)
	}
}

// TestRestartReplacesUnusableLV: an lvcreate killed midway can leave an LV in the VG metadata that
// no activation can give a device (its thin device was never made). Found before it was recorded,
// it held no data and is removed and created again; once recorded, a missing device node is never
// a reason to remove an LV.
func TestRestartReplacesUnusableLV(t *testing.T) {
	for _, recorded := range []bool{false, true} {
		t.Run(fmt.Sprintf("recorded=%t", recorded), func(t *testing.T) {
			f := newFakeLVM()
			first := newEnvOn(t, f, newClient(t, nil, newLV("a", class("thin"))))
			first.mustReconcile("a")
			inAPI := first.get("a")
			if !recorded {
				inAPI.Status = topolvmv1.LogicalVolumeStatus{} // the status write never happened
			}
			var statted []string
			missing := func(p string) error { statted = append(statted, p); return fs.ErrNotExist }
			f.Reset()
			second := newEnvStat(t, f, newClient(t, nil, inAPI), missing)
			second.mustReconcile("a")
			got := second.get("a")
			if recorded {
				if n := f.Count("lvremove") + f.Count("lvcreate"); n != 0 || len(statted) != 0 {
					t.Fatalf("a recorded LV was replaced: calls %v, stat %v", f.Calls(), statted)
				}
				checkHealthy(t, got)
				return
			}
			if f.Count("lvremove") != 1 || f.Count("lvcreate") != 1 {
				t.Fatalf("want one lvremove and one lvcreate, got %v", f.Calls())
			}
			if want := []string{"/dev/vg/uid-a"}; !slices.Equal(statted, want) {
				t.Errorf("stat %v, want %v", statted, want)
			}
			if got.Status.VolumeID != "uid-a" {
				t.Errorf("status %+v, want volume uid-a", got.Status)
			}
			checkHealthy(t, got)
			f.Reset()
			second.mustReconcile("a") // recorded now: its device is not looked at again
			if n := f.Count(""); n != 0 || len(statted) != 1 {
				t.Errorf("reconcile after the replacement ran %v, stat %v", f.Calls(), statted)
			}
		})
	}
}

// TestStaleCacheKeepsARecordedLV: a reconcile right after the one that created the LV can read the
// object from a cache that has not yet seen the status naming it. The LV's device node missing too
// (a fake without device nodes, or udev still busy) must not get the LV removed as unusable: the API
// server shows it recorded, so it may be in use already.
func TestStaleCacheKeepsARecordedLV(t *testing.T) {
	f := newFakeLVM()
	first := newEnvOn(t, f, newClient(t, nil, newLV("a", class("thin"))))
	first.mustReconcile("a")
	inAPI := first.get("a")
	if inAPI.Status.VolumeID != "uid-a" {
		t.Fatalf("first reconcile recorded %q, want uid-a", inAPI.Status.VolumeID)
	}
	cached := inAPI.DeepCopy()
	cached.Status = topolvmv1.LogicalVolumeStatus{}
	var statted []string
	missing := func(p string) error { statted = append(statted, p); return fs.ErrNotExist }
	r, err := New(Options{Client: newClient(t, nil, cached), APIReader: newClient(t, nil, inAPI),
		NodeName: node, LVM: first.svc, StatDevice: missing})
	if err != nil {
		t.Fatal(err)
	}
	f.Reset()
	if _, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "a"}}); err != nil {
		t.Fatal(err)
	}
	if len(statted) != 1 {
		t.Fatalf("stat %v: the reconcile never weighed the LV as unusable, so this test shows nothing", statted)
	}
	if n := f.Count("lvremove") + f.Count("lvcreate"); n != 0 {
		t.Errorf("a recorded LV was replaced on a stale read: calls %v", f.Calls())
	}
	if _, err := first.svc.GetLV(t.Context(), "uid-a", "thin"); err != nil {
		t.Errorf("the LV after the stale reconcile: %v", err)
	}
}

// TestSteadyState: reconciling a created volume again runs no lvm command and writes nothing.
func TestSteadyState(t *testing.T) {
	writes := 0
	count := &interceptor.Funcs{
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, o ...client.SubResourceApplyOption) error {
			writes++
			return c.SubResource(sub).Apply(ctx, obj, o...)
		},
	}
	e := newEnvOn(t, newFakeLVM(), newClient(t, count, newLV("a")))
	e.mustReconcile("a")
	e.fake.Reset()
	writes = 0
	e.mustReconcile("a")
	if n := e.fake.Count(""); n != 0 || writes != 0 {
		t.Errorf("second reconcile ran %d lvm commands and %d status writes: %v", n, writes, e.fake.Calls())
	}
}

func TestOtherNodesAreIgnored(t *testing.T) {
	e := newEnv(t, newLV("a", onNode("node-b")))
	e.mustReconcile("a")
	got := e.get("a")
	if len(got.Finalizers) != 0 || got.Status.VolumeID != "" || e.fake.Count("lvcreate") != 0 {
		t.Errorf("another node's volume was touched: %+v, calls %v", got, e.fake.Calls())
	}
	if err := e.reconcile("gone"); err != nil {
		t.Errorf("reconcile of a deleted object: %v", err)
	}
}

func TestNewRequiresDependencies(t *testing.T) {
	if _, err := New(Options{NodeName: node}); err == nil {
		t.Error("New without Client and LVM succeeded")
	}
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// TestRestartBeforeClassesLoaded: an agent killed while lvcreate ran restarts with no device
// classes loaded yet. Neither a create nor a delete may act on that: the create reports no
// failure (the CSI controller would delete the object) and the delete keeps the finalizer, since
// the unrecorded LV may exist. Once the classes are loaded, the LV is adopted or removed.
func TestRestartBeforeClassesLoaded(t *testing.T) {
	for _, deleted := range []bool{false, true} {
		t.Run(fmt.Sprintf("deleted=%t", deleted), func(t *testing.T) {
			f := newFakeLVM()
			first := newEnvOn(t, f, newClient(t, nil, newLV("a", class("thin"))))
			first.mustReconcile("a")
			inAPI := first.get("a")
			inAPI.Status = topolvmv1.LogicalVolumeStatus{} // the status write never happened
			if deleted {
				inAPI.DeletionTimestamp = new(metav1.Now())
			}

			classes, err := lvmd.NewDeviceClassManager(nil)
			if err != nil {
				t.Fatal(err)
			}
			svc, err := lvmd.NewService(lvmd.Options{Executor: f, Classes: classes, RefreshInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			cl := newClient(t, nil, inAPI)
			r, err := New(
				Options{
					Client:     cl,
					APIReader:  cl,
					NodeName:   node,
					LVM:        svc,
					StatDevice: func(string) error { return nil },
				},
			)
			if err != nil {
				t.Fatal(err)
			}
			second := &env{t: t, fake: f, svc: svc, client: cl, r: r}
			f.Reset()
			res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "a"}})
			got := second.get("a")
			if deleted {
				if err == nil || !slices.Contains(got.Finalizers, Finalizer) || f.Count("lvremove") != 0 {
					t.Fatalf(
						"delete before the classes were loaded: err %v, finalizers %v, lvremove %d; want an error, the finalizer kept, no lvremove",
						err,
						got.Finalizers,
						f.Count("lvremove"),
					)
				}
			} else if err != nil || res.RequeueAfter <= 0 || got.Status.Code != 0 || len(got.Status.Conditions) != 0 || f.Count("lvcreate") != 0 {
				t.Fatalf(
					"create before the classes were loaded: result %+v, err %v, status %+v, lvcreate %d; want a requeue and no status",
					res,
					err,
					got.Status,
					f.Count("lvcreate"),
				)
			}

			if err := classes.Replace(testConfig()); err != nil {
				t.Fatal(err)
			}
			second.mustReconcile("a")
			lvs, err := svc.ListLVs(t.Context(), "thin")
			if err != nil {
				t.Fatal(err)
			}
			if deleted {
				if len(lvs) != 0 || f.Count("lvremove") != 1 {
					t.Fatalf("after loading: LVs %v, lvremove %d; want the LV removed", lvs, f.Count("lvremove"))
				}
				return
			}
			got = second.get("a")
			if len(lvs) != 1 || f.Count("lvcreate") != 0 || got.Status.VolumeID != "uid-a" {
				t.Fatalf(
					"after loading: LVs %v, lvcreate %d, status %+v; want the existing LV adopted",
					lvs,
					f.Count("lvcreate"),
					got.Status,
				)
			}
			checkHealthy(t, got)
		})
	}
}
