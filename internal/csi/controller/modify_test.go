package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

func TestIOLimitsParameters(t *testing.T) {
	cur := &topolvmv1.IOLimits{ReadBytesPerSecond: 1 << 20, WriteIOPS: 50}
	for _, tc := range []struct {
		name   string
		params map[string]string
		cur    *topolvmv1.IOLimits
		want   *topolvmv1.IOLimits
		bad    bool
	}{
		{"none", nil, nil, nil, false},
		{"all four", map[string]string{driver.ParamReadBPS: "10Mi", driver.ParamWriteBPS: "1G",
			driver.ParamReadIOPS: "100", driver.ParamWriteIOPS: "200"}, nil,
			&topolvmv1.IOLimits{ReadBytesPerSecond: 10 << 20, WriteBytesPerSecond: 1e9, ReadIOPS: 100, WriteIOPS: 200},
			false},
		{"keys left out are kept", map[string]string{driver.ParamWriteBPS: "4096"}, cur,
			&topolvmv1.IOLimits{ReadBytesPerSecond: 1 << 20, WriteBytesPerSecond: 4096, WriteIOPS: 50}, false},
		{"max removes a cap", map[string]string{driver.ParamWriteIOPS: "max"}, cur,
			&topolvmv1.IOLimits{ReadBytesPerSecond: 1 << 20}, false},
		{"max of every cap is none", map[string]string{driver.ParamReadBPS: "max", driver.ParamWriteIOPS: "max"},
			cur, nil, false},
		{"unknown key", map[string]string{"topolvm.io/readahead": "128Ki"}, nil, nil, true},
		{"the read-ahead is not a cap", map[string]string{driver.ParamReadAhead: "128Ki"}, cur, cur, false},
		{"unknown key beside a good one", map[string]string{driver.ParamReadBPS: "1Mi", "x": "1"}, nil, nil, true},
		{"zero", map[string]string{driver.ParamReadIOPS: "0"}, nil, nil, true},
		{"negative bytes", map[string]string{driver.ParamReadBPS: "-1Mi"}, nil, nil, true},
		{"fractional bytes", map[string]string{driver.ParamReadBPS: "0.5"}, nil, nil, true},
		{"iops as a quantity", map[string]string{driver.ParamWriteIOPS: "1k"}, nil, nil, true},
		{"garbage", map[string]string{driver.ParamWriteBPS: "fast"}, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.cur.DeepCopy()
			got, err := IOLimits(tc.params, tc.cur)
			if tc.bad {
				if !errors.Is(err, errInvalid) {
					t.Fatalf("IOLimits(%v) = %+v, %v; want errInvalid", tc.params, got, err)
				}
				t.Logf("refused: %v", err)
				return
			}
			if err != nil || !ptr.Equal(got, tc.want) {
				t.Fatalf("IOLimits(%v) = %+v, %v; want %+v", tc.params, got, err, tc.want)
			}
			if !ptr.Equal(tc.cur, before) {
				t.Errorf("IOLimits changed its input %+v to %+v", before, tc.cur)
			}
		})
	}
}

// manualVolume creates a volume on the node that never answers by itself and returns its ID and
// object name.
func manualVolume(ctx context.Context, t *testing.T, prefix string) (string, string) {
	t.Helper()
	name := uniqueName(prefix)
	res, lv := startManual(ctx, t, name)
	answer(t, lv)
	return await(ctx, t, res).resp.GetVolume().GetVolumeId(), lv.Name
}

// startModify calls ControllerModifyVolume in the background and returns once the spec it asks for
// is written (the call then waits for the node).
func startModify(ctx context.Context, t *testing.T, id, name string, params map[string]string,
	written func(*topolvmv1.LogicalVolume) bool) (<-chan error, *topolvmv1.LogicalVolume) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := srv.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{
			VolumeId: id, MutableParameters: params,
		})
		done <- err
	}()
	for {
		lv := getLV(t, name)
		if written(lv) {
			select {
			case err := <-done:
				t.Fatalf("ControllerModifyVolume returned before the node reported: %v", err)
			case <-time.After(200 * time.Millisecond):
			}
			return done, lv
		}
		select {
		case err := <-done:
			t.Fatalf("ControllerModifyVolume returned before writing the spec: %v (spec %+v)", err, lv.Spec.IOLimits)
		case <-ctx.Done():
			t.Fatal("the spec was never written")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// reportIOLimited writes what a node agent writes after applying the caps of lv's generation.
func reportIOLimited(t *testing.T, lv *topolvmv1.LogicalVolume, st metav1.ConditionStatus, msg string) {
	t.Helper()
	report(t, lv, metav1.Condition{Type: topolvmv1.ConditionIOLimited, Status: st, Message: msg})
}

// report writes, as a node agent does in one status apply, the conditions of lv's generation and
// the observed generation.
func report(t *testing.T, lv *topolvmv1.LogicalVolume, conditions ...metav1.Condition) {
	t.Helper()
	orig := lv.DeepCopy()
	lv.Status.ObservedGeneration = lv.Generation
	for _, c := range conditions {
		c.Reason, c.ObservedGeneration = "Test", lv.Generation
		meta.SetStatusCondition(&lv.Status.Conditions, c)
	}
	if err := k8s.Status().Patch(t.Context(), lv, client.MergeFrom(orig)); err != nil {
		t.Fatalf("write node status: %v", err)
	}
}

func waitDone(ctx context.Context, t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		t.Fatal("ControllerModifyVolume did not return after the node reported")
	}
	return nil
}

func TestControllerModifyVolume(t *testing.T) {
	ctx := testCtx(t)
	id, name := manualVolume(ctx, t, "vac")

	done, lv := startModify(ctx, t, id, name,
		map[string]string{driver.ParamWriteBPS: "10Mi", driver.ParamReadIOPS: "100"},
		func(lv *topolvmv1.LogicalVolume) bool { return lv.Spec.IOLimits != nil })
	want := topolvmv1.IOLimits{WriteBytesPerSecond: 10 << 20, ReadIOPS: 100}
	if *lv.Spec.IOLimits != want {
		t.Fatalf("spec.ioLimits %+v, want %+v", *lv.Spec.IOLimits, want)
	}
	reportIOLimited(t, lv, metav1.ConditionTrue, "caps in force in 1 pod")
	if err := waitDone(ctx, t, done); err != nil {
		t.Fatalf("ControllerModifyVolume: %v", err)
	}

	// The same class again is done at once: the node reported this generation.
	if _, err := srv.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: id,
		MutableParameters: map[string]string{driver.ParamWriteBPS: "10Mi"}}); err != nil {
		t.Fatalf("ControllerModifyVolume of what is in force: %v", err)
	}

	// Removing every cap: the node must report again (it removes them from the pods).
	done, lv = startModify(ctx, t, id, name,
		map[string]string{driver.ParamWriteBPS: "max", driver.ParamReadIOPS: "max"},
		func(lv *topolvmv1.LogicalVolume) bool { return lv.Spec.IOLimits == nil })
	reportIOLimited(t, lv, metav1.ConditionFalse, "pod x: no io.max")
	wantCode(t, waitDone(ctx, t, done), codes.Internal)

	_, err := srv.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: id,
		MutableParameters: map[string]string{driver.ParamWriteBPS: "fast"}})
	wantCode(t, err, codes.InvalidArgument)
	if lv := getLV(t, name); lv.Spec.IOLimits != nil {
		t.Errorf("a refused class changed spec.ioLimits to %+v", lv.Spec.IOLimits)
	}
	_, err = srv.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: "no-such-volume",
		MutableParameters: map[string]string{driver.ParamWriteBPS: "1Mi"}})
	wantCode(t, err, codes.NotFound)
}

// TestControllerModifyVolumeOnAnOlderAgent: a node agent that reconciles the new generation without
// reporting IOLimited cannot apply caps; the call fails instead of waiting for ever.
func TestControllerModifyVolumeOnAnOlderAgent(t *testing.T) {
	ctx := testCtx(t)
	id, name := manualVolume(ctx, t, "vac-old")
	done, lv := startModify(ctx, t, id, name, map[string]string{driver.ParamReadBPS: "1Mi"},
		func(lv *topolvmv1.LogicalVolume) bool { return lv.Spec.IOLimits != nil })
	orig := lv.DeepCopy()
	lv.Status.ObservedGeneration = lv.Generation
	if err := k8s.Status().Patch(t.Context(), lv, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, waitDone(ctx, t, done), codes.FailedPrecondition)
}

func TestCreateVolumeWithMutableParameters(t *testing.T) {
	name := uniqueName("vac-create")
	req := createReq(name)
	req.MutableParameters = map[string]string{driver.ParamReadBPS: "1Mi"}
	mustCreate(t, req)
	if lv := getLV(
		t,
		name,
	); lv.Spec.IOLimits == nil ||
		*lv.Spec.IOLimits != (topolvmv1.IOLimits{ReadBytesPerSecond: 1 << 20}) {
		t.Errorf("spec.ioLimits %+v, want read 1Mi", lv.Spec.IOLimits)
	}
	name = uniqueName("vac-create")
	req = createReq(name)
	req.MutableParameters = map[string]string{driver.ParamReadAhead: "1Mi"}
	mustCreate(t, req)
	if lv := getLV(t, name); lv.Spec.ReadAhead != "2048" || lv.Spec.IOLimits != nil {
		t.Errorf("spec.readAhead %q, ioLimits %+v; want 2048 sectors and no caps", lv.Spec.ReadAhead, lv.Spec.IOLimits)
	}
	for _, params := range []map[string]string{
		{driver.ParamReadAhead: "1"}, {"topolvm.io/readahead": "1Mi"},
	} {
		req = createReq(uniqueName("vac-create"))
		req.MutableParameters = params
		_, err := srv.CreateVolume(testCtx(t), req)
		wantCode(t, err, codes.InvalidArgument)
	}
}

func TestReadAheadParameter(t *testing.T) {
	for _, tc := range []struct {
		name, cur, want string
		params          map[string]string
		bad             bool
	}{
		{name: "left out", cur: "256", want: "256"},
		{name: "left out of none", want: ""},
		{name: "auto", cur: "256", want: "auto", params: map[string]string{driver.ParamReadAhead: "auto"}},
		{name: "none", want: "none", params: map[string]string{driver.ParamReadAhead: "none"}},
		{name: "zero is none", want: "none", params: map[string]string{driver.ParamReadAhead: "0"}},
		{name: "bytes", want: "8", params: map[string]string{driver.ParamReadAhead: "4096"}},
		{name: "Mi", want: "8192", params: map[string]string{driver.ParamReadAhead: "4Mi"}},
		{name: "the caps are not the read-ahead", cur: "16", want: "16",
			params: map[string]string{driver.ParamWriteBPS: "1Mi"}},
		{name: "not sectors", params: map[string]string{driver.ParamReadAhead: "1000"}, bad: true},
		{name: "negative", params: map[string]string{driver.ParamReadAhead: "-4Ki"}, bad: true},
		{name: "too large", params: map[string]string{driver.ParamReadAhead: "4Ti"}, bad: true},
		{name: "fraction", params: map[string]string{driver.ParamReadAhead: "1024.5"}, bad: true},
		{name: "half a kibibyte", want: "1", params: map[string]string{driver.ParamReadAhead: "0.5Ki"}},
		{name: "garbage", params: map[string]string{driver.ParamReadAhead: "max"}, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadAhead(tc.params, tc.cur)
			if tc.bad {
				if !errors.Is(err, errInvalid) {
					t.Fatalf("ReadAhead(%v) = %q, %v; want errInvalid", tc.params, got, err)
				}
				t.Logf("refused: %v", err)
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ReadAhead(%v, %q) = %q, %v; want %q", tc.params, tc.cur, got, err, tc.want)
			}
		})
	}
}

// TestControllerModifyVolumeReadAhead: a class with a read-ahead and a cap is done when the node has
// reported both for the new generation; a failed read-ahead fails the call.
func TestControllerModifyVolumeReadAhead(t *testing.T) {
	ctx := testCtx(t)
	id, name := manualVolume(ctx, t, "vac-ra")
	done, lv := startModify(ctx, t, id, name,
		map[string]string{driver.ParamReadAhead: "512Ki", driver.ParamWriteIOPS: "300"},
		func(lv *topolvmv1.LogicalVolume) bool { return lv.Spec.ReadAhead != "" })
	if lv.Spec.ReadAhead != "1024" || lv.Spec.IOLimits == nil || lv.Spec.IOLimits.WriteIOPS != 300 {
		t.Fatalf("spec.readAhead %q, ioLimits %+v; want 1024 and write IOPS 300", lv.Spec.ReadAhead, lv.Spec.IOLimits)
	}
	report(t, lv,
		metav1.Condition{Type: topolvmv1.ConditionIOLimited, Status: metav1.ConditionTrue, Message: "1 pod"},
		metav1.Condition{Type: topolvmv1.ConditionReadAheadSet, Status: metav1.ConditionTrue, Message: "1024"})
	if err := waitDone(ctx, t, done); err != nil {
		t.Fatalf("ControllerModifyVolume: %v", err)
	}

	// Only the read-ahead: the caps are kept, and an lvchange failure is the call's, with the code the
	// node classified it with (a thick origin of VolumeSnapshots: FailedPrecondition).
	done, lv = startModify(ctx, t, id, name, map[string]string{driver.ParamReadAhead: "auto"},
		func(lv *topolvmv1.LogicalVolume) bool { return lv.Spec.ReadAhead == "auto" })
	if lv.Spec.IOLimits == nil || lv.Spec.IOLimits.WriteIOPS != 300 {
		t.Fatalf("spec.ioLimits %+v after a class with the read-ahead only; want the caps kept", lv.Spec.IOLimits)
	}
	orig := lv.DeepCopy()
	lv.Status.ObservedGeneration = lv.Generation
	lv.Status.Code, lv.Status.Message = uint32(codes.FailedPrecondition), "in use: LV has copy-on-write snapshot s"
	for _, c := range []metav1.Condition{
		{Type: topolvmv1.ConditionIOLimited, Status: metav1.ConditionTrue, Reason: "Test"},
		{Type: topolvmv1.ConditionReadAheadSet, Status: metav1.ConditionFalse, Reason: "Test"},
	} {
		c.ObservedGeneration = lv.Generation
		meta.SetStatusCondition(&lv.Status.Conditions, c)
	}
	if err := k8s.Status().Patch(t.Context(), lv, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, waitDone(ctx, t, done), codes.FailedPrecondition)
}
