package logicalvolume

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

// fakeFetcher hands each Fetch to the test, which reports checkpoints and ends it.
type fakeFetcher struct{ calls chan *fetchCall }

type fetchCall struct {
	f          Fetch
	checkpoint func(transfer.Progress)
	result     chan fetchResult
}

type fetchResult struct {
	p   transfer.Progress
	err error
}

func (f *fakeFetcher) Fetch(ctx context.Context, req Fetch, cp func(transfer.Progress)) (transfer.Progress, error) {
	c := &fetchCall{f: req, checkpoint: cp, result: make(chan fetchResult)}
	f.calls <- c
	select {
	case r := <-c.result:
		return r.p, r.err
	case <-ctx.Done():
		return req.From, ctx.Err()
	}
}

// newTransferEnv is a reconciler of node-a with a fake fetcher, and failed attempts retried at once.
func newTransferEnv(t *testing.T, objs ...client.Object) (*env, *fakeFetcher) {
	t.Helper()
	e := newEnv(t, objs...)
	ff := &fakeFetcher{calls: make(chan *fetchCall, 1)}
	r, err := New(Options{Client: e.client, APIReader: e.client, NodeName: node, LVM: e.svc, Fetcher: ff,
		StatDevice: func(string) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	r.copies.backoff = func(int32) time.Duration { return 0 }
	e.r = r
	return e, ff
}

// fromNodeB is a restore of snapshot snap-1 of node-b.
func fromNodeB(lv *topolvmv1.LogicalVolume) {
	lv.Spec.Source, lv.Spec.AccessType, lv.Spec.SourceNode = "snap-1", topolvmv1.AccessTypeReadWrite, "node-b"
}

// grant writes the operator's token for attempt.
func (e *env) grant(name string, attempt int32) {
	e.t.Helper()
	lv := e.get(name)
	lv.Status.Transfer.Token, lv.Status.Transfer.TokenAttempt = "token-"+string(rune('0'+attempt)), attempt
	lv.Status.Transfer.SourceAddress = "10.0.0.2:9830"
	if err := e.client.Status().Update(e.t.Context(), lv); err != nil {
		e.t.Fatal(err)
	}
}

// woken waits for the copy's wake of the reconcile.
func (e *env) woken() {
	e.t.Helper()
	select {
	case <-e.r.copies.wake:
	case <-time.After(10 * time.Second):
		e.t.Fatal("the copy did not wake the reconcile")
	}
}

func nextCall(t *testing.T, ff *fakeFetcher) *fetchCall {
	t.Helper()
	select {
	case c := <-ff.calls:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no fetch started")
		return nil
	}
}

func transferOf(t *testing.T, lv *topolvmv1.LogicalVolume) topolvmv1.TransferStatus {
	t.Helper()
	if lv.Status.Transfer == nil {
		t.Fatalf("no status.transfer: %+v", lv.Status)
	}
	return *lv.Status.Transfer
}

// TestCopyFromAnotherNode: the LV is created, waits for a token, copies, resumes a failed attempt
// from its last verified byte with a new token, and gets its volume ID only once complete.
func TestCopyFromAnotherNode(t *testing.T) {
	e, ff := newTransferEnv(t, newLV("r", class("thin"), fromNodeB))
	e.mustReconcile("r")
	got := e.get("r")
	if tr := transferOf(t, got); tr.Phase != topolvmv1.TransferWaiting || tr.Attempt != 1 || tr.StartTime == nil ||
		got.Status.VolumeID != "" || got.Status.Code != 0 {
		t.Fatalf("before the token: %+v, volumeID %q, code %d", tr, got.Status.VolumeID, got.Status.Code)
	}
	if c := condition(got, topolvmv1.ConditionCopied); c.Status != "False" || c.Reason != ReasonWaitingForToken {
		t.Errorf("Copied condition %+v", c)
	}
	if e.fake.Count("lvcreate") != 1 {
		t.Errorf("lvcreate ran %d times: %v", e.fake.Count("lvcreate"), e.fake.Calls())
	}

	e.grant("r", 1)
	e.mustReconcile("r")
	c := nextCall(t, ff)
	if c.f.Token != "token-1" || c.f.Address != "10.0.0.2:9830" || c.f.SourceNode != "node-b" || c.f.Dense ||
		c.f.From != (transfer.Progress{}) || c.f.Device == "" {
		t.Fatalf("first fetch %+v", c.f)
	}
	if tr := transferOf(t, e.get("r")); tr.Phase != topolvmv1.TransferCopying {
		t.Errorf("while copying: %+v", tr)
	}
	c.checkpoint(transfer.Progress{Offset: 8 << 20, Bytes: 4 << 20})
	e.woken()
	e.mustReconcile("r")
	if tr := transferOf(t, e.get("r")); tr.VerifiedBytes != 8<<20 || tr.CopiedBytes != 4<<20 {
		t.Errorf("after a checkpoint: %+v", tr)
	}
	c.result <- fetchResult{transfer.Progress{Offset: 8 << 20, Bytes: 4 << 20}, errors.New("connection reset")}
	e.woken()
	e.mustReconcile("r")
	got = e.get("r")
	if tr := transferOf(t, got); tr.Attempt != 2 || tr.Phase != topolvmv1.TransferWaiting || tr.Message == "" ||
		got.Status.Code != 0 || got.Status.VolumeID != "" {
		t.Fatalf("after a failed attempt: %+v, code %d", tr, got.Status.Code)
	}

	e.grant("r", 2)
	e.mustReconcile("r")
	c = nextCall(t, ff)
	if c.f.Token != "token-2" || c.f.From != (transfer.Progress{Offset: 8 << 20, Bytes: 4 << 20}) {
		t.Fatalf("the second attempt does not resume: %+v", c.f)
	}
	c.result <- fetchResult{p: transfer.Progress{Offset: uint64(gib), Bytes: 100 << 20, Complete: true}}
	e.woken()
	e.mustReconcile("r")
	got = e.get("r")
	tr := transferOf(t, got)
	if tr.Phase != topolvmv1.TransferComplete || tr.CompletionTime == nil || tr.CopiedBytes != 100<<20 ||
		got.Status.VolumeID != LVName(got) {
		t.Fatalf("after the copy: %+v, volumeID %q", tr, got.Status.VolumeID)
	}
	if c := condition(got, topolvmv1.ConditionCopied); c.Status != "True" {
		t.Errorf("Copied condition %+v", c)
	}
	e.mustReconcile("r") // steady: no fetch, no change
	select {
	case c := <-ff.calls:
		t.Fatalf("a complete copy fetched again: %+v", c.f)
	default:
	}
}

func TestCopyOutcomes(t *testing.T) {
	t.Run("a thick target asks for every byte", func(t *testing.T) {
		e, ff := newTransferEnv(t, newLV("r", fromNodeB))
		e.mustReconcile("r")
		e.grant("r", 1)
		e.mustReconcile("r")
		c := nextCall(t, ff)
		if !c.f.Dense {
			t.Errorf("a thick target's fetch is not dense: %+v", c.f)
		}
		c.result <- fetchResult{p: transfer.Progress{Complete: true}}
	})
	t.Run("a source gone from its node fails the LogicalVolume", func(t *testing.T) {
		e, ff := newTransferEnv(t, newLV("r", class("thin"), fromNodeB))
		e.mustReconcile("r")
		e.grant("r", 1)
		e.mustReconcile("r")
		nextCall(t, ff).result <- fetchResult{err: transfer.ErrNotFound}
		e.woken()
		if err := e.reconcile("r"); !isTerminal(err) {
			t.Errorf("reconcile: %v, want a terminal error", err)
		}
		if got := e.get("r"); codes.Code(got.Status.Code) != codes.NotFound || got.Status.VolumeID != "" {
			t.Errorf("status %+v", got.Status)
		}
	})
	t.Run("an attempt a restart interrupted is followed by the next", func(t *testing.T) {
		lv := newLV("r", class("thin"), fromNodeB)
		lv.Status.Transfer = &topolvmv1.TransferStatus{Phase: topolvmv1.TransferCopying, Attempt: 3,
			VerifiedBytes: 1 << 20, Token: "token-3", TokenAttempt: 3}
		e, _ := newTransferEnv(t, lv)
		e.mustReconcile("r")
		if tr := transferOf(t, e.get("r")); tr.Attempt != 4 || tr.Phase != topolvmv1.TransferWaiting ||
			tr.VerifiedBytes != 1<<20 {
			t.Errorf("after a restart: %+v", tr)
		}
	})
	t.Run("an agent without transfers refuses", func(t *testing.T) {
		e := newEnv(t, newLV("r", class("thin"), fromNodeB))
		if err := e.reconcile("r"); !isTerminal(err) {
			t.Errorf("reconcile: %v, want a terminal error", err)
		}
		if got := e.get("r"); got.Status.Code == 0 || got.Status.VolumeID != "" {
			t.Errorf("status %+v", got.Status)
		}
	})
	t.Run("deleting the LogicalVolume stops its copy", func(t *testing.T) {
		e, ff := newTransferEnv(t, newLV("r", class("thin"), fromNodeB))
		e.mustReconcile("r")
		e.grant("r", 1)
		e.mustReconcile("r")
		nextCall(t, ff)
		if err := e.client.Delete(e.t.Context(), e.get("r")); err != nil {
			t.Fatal(err)
		}
		e.mustReconcile("r")
		if _, ok := e.r.copies.state("r"); ok {
			t.Error("the copy of a deleted LogicalVolume still runs")
		}
		if e.fake.Count("lvremove") != 1 {
			t.Errorf("lvremove ran %d times: %v", e.fake.Count("lvremove"), e.fake.Calls())
		}
	})
}
