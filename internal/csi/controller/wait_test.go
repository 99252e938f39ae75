package controller

import (
	"context"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

type createResult struct {
	resp *csi.CreateVolumeResponse
	err  error
	at   time.Time
}

// startManual starts CreateVolume of a volume on the node that never answers by itself, and returns
// once the LogicalVolume exists (the call is then waiting for the node).
func startManual(ctx context.Context, t *testing.T, name string) (<-chan createResult, *topolvmv1.LogicalVolume) {
	t.Helper()
	seen := nodeAgent.expect(name)
	res := make(chan createResult, 1)
	go func() {
		r, err := srv.CreateVolume(ctx, createReq(name, onNode(nodeManual)))
		res <- createResult{resp: r, err: err, at: time.Now()}
	}()
	select {
	case lv := <-seen:
		return res, lv
	case r := <-res:
		t.Fatalf("CreateVolume returned before the node answered: %v, %v", r.resp, r.err)
	case <-ctx.Done():
		t.Fatalf("the LogicalVolume %s never appeared", name)
	}
	return nil, nil
}

// answer writes what a node writes once the LV exists.
func answer(t *testing.T, lv *topolvmv1.LogicalVolume) {
	t.Helper()
	orig := lv.DeepCopy()
	lv.Status.VolumeID = "lv-" + lv.Name
	lv.Status.CurrentSize = extents(lv.Spec.Size)
	if err := k8s.Status().Patch(t.Context(), lv, client.MergeFrom(orig)); err != nil {
		t.Fatalf("write node status: %v", err)
	}
}

func await(ctx context.Context, t *testing.T, res <-chan createResult) createResult {
	t.Helper()
	select {
	case r := <-res:
		if r.err != nil {
			t.Fatalf("CreateVolume: %v", r.err)
		}
		return r
	case <-ctx.Done():
		t.Fatalf("CreateVolume did not return after the node's status was written")
	}
	return createResult{}
}

// TestCreateVolumeNeverWaitsOnTheClock proves there is no sleep or poll loop: the service's clock is
// frozen (never advanced) and nothing may wait on it, the service does not read the cache while no event
// arrives, and CreateVolume still returns as soon as the node's status is written.
func TestCreateVolumeNeverWaitsOnTheClock(t *testing.T) {
	ctx := testCtx(t)
	frozenAt := frozen.Now()
	res, lv := startManual(ctx, t, uniqueName("frozen"))

	time.Sleep(100 * time.Millisecond) // let the service's own informer deliver the creation event
	if frozen.HasWaiters() {
		t.Fatalf("CreateVolume waits on a timer of its clock: a sleep/poll loop")
	}
	before := reads.n.Load()
	time.Sleep(300 * time.Millisecond)
	if n := reads.n.Load() - before; n != 0 {
		t.Fatalf("CreateVolume read the cache %d times in 300ms without any event: a poll loop", n)
	}

	answer(t, lv)
	await(ctx, t, res)
	if !frozen.Now().Equal(frozenAt) {
		t.Errorf("the frozen clock moved")
	}
}

func TestConcurrentCallsOnOneVolumeAreAborted(t *testing.T) {
	ctx := testCtx(t)
	name := uniqueName("lock")
	res, lv := startManual(ctx, t, name)

	_, err := srv.CreateVolume(testCtx(t), createReq(name, onNode(nodeManual)))
	wantCode(t, err, codes.Aborted)

	// Another volume is not held up while the first call waits.
	quick, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := srv.CreateVolume(quick, createReq(uniqueName("lock"))); err != nil {
		t.Fatalf("CreateVolume of another volume while one waits: %v", err)
	}

	answer(t, lv)
	await(ctx, t, res)
	// Once the first call is done, the same request succeeds (idempotently).
	mustCreate(t, createReq(name, onNode(nodeManual)))
}

func TestCreateVolumeHonoursTheDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := srv.CreateVolume(ctx, createReq(uniqueName("deadline"), onNode(nodeManual)))
	wantCode(t, err, codes.DeadlineExceeded)
}
