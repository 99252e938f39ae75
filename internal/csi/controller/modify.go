package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// unlimited is the value of a mutable parameter that removes its cap.
const unlimited = "max"

type ioLimitParam struct {
	key   string
	bytes bool
	field func(*topolvmv1.IOLimits) *int64
}

// ioLimitParams are the mutable parameters of a VolumeAttributesClass this driver applies, with the
// field of IOLimits each sets and whether its value is a byte quantity.
var ioLimitParams = []ioLimitParam{
	{driver.ParamReadBPS, true, func(l *topolvmv1.IOLimits) *int64 { return &l.ReadBytesPerSecond }},
	{driver.ParamWriteBPS, true, func(l *topolvmv1.IOLimits) *int64 { return &l.WriteBytesPerSecond }},
	{driver.ParamReadIOPS, false, func(l *topolvmv1.IOLimits) *int64 { return &l.ReadIOPS }},
	{driver.ParamWriteIOPS, false, func(l *topolvmv1.IOLimits) *int64 { return &l.WriteIOPS }},
}

// IOLimits applies mutable parameters to cur (nil: none yet) and returns the result, nil when it
// caps nothing. Only the keys given change (the CSI spec: a key left out is left as it is); "max"
// removes a cap. An unknown key or a value that is not a positive whole number is errInvalid: a
// class this driver cannot apply in full is refused, never applied in part.
func IOLimits(params map[string]string, cur *topolvmv1.IOLimits) (*topolvmv1.IOLimits, error) {
	out := topolvmv1.IOLimits{}
	if cur != nil {
		out = *cur
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		i := slices.IndexFunc(ioLimitParams, func(p ioLimitParam) bool { return p.key == k })
		if i < 0 {
			return nil, fmt.Errorf("%w: mutable parameter %q is not one this driver can change (%s)", errInvalid, k,
				"topolvm.io/read-bps, write-bps, read-iops, write-iops")
		}
		n, err := limitValue(params[k], ioLimitParams[i].bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: mutable parameter %s: %w", errInvalid, k, err)
		}
		*ioLimitParams[i].field(&out) = n
	}
	if out == (topolvmv1.IOLimits{}) {
		return nil, nil
	}
	return &out, nil
}

// limitValue is a cap's value: "max" (0, no cap), a positive byte quantity ("50Mi") or count.
func limitValue(v string, bytes bool) (int64, error) {
	if v == unlimited {
		return 0, nil
	}
	if !bytes {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q is not a positive whole number or %q", v, unlimited)
		}
		return n, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() <= 0 {
		return 0, fmt.Errorf("%q is not a positive quantity of bytes or %q", v, unlimited)
	}
	n, ok := q.AsInt64()
	if !ok {
		return 0, fmt.Errorf("%q is not a whole number of bytes", v)
	}
	return n, nil
}

// ControllerModifyVolume applies the mutable parameters of a VolumeAttributesClass: it records the
// caps in spec.ioLimits of the LogicalVolume and waits until the volume's node reports them in force
// in every pod that uses the volume (condition IOLimited of the new generation).
func (s *Server) ControllerModifyVolume(
	ctx context.Context,
	req *csi.ControllerModifyVolumeRequest,
) (*csi.ControllerModifyVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID is required")
	}
	release, err := s.locks.Lock(id)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := s.modify(ctx, id, req.GetMutableParameters()); err != nil {
		return nil, rpcError(err)
	}
	return &csi.ControllerModifyVolumeResponse{}, nil
}

func (s *Server) modify(ctx context.Context, id string, params map[string]string) error {
	lv, err := s.getByVolumeID(ctx, id)
	if err != nil {
		return err
	}
	if lv == nil {
		return fmt.Errorf("volume %s: %w", id, errNotFound)
	}
	want, err := IOLimits(params, lv.Spec.IOLimits)
	if err != nil {
		return err
	}
	gen := lv.Generation
	if !ptr.Equal(want, lv.Spec.IOLimits) {
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"ioLimits": want}})
		if err != nil {
			return fmt.Errorf("encode ioLimits patch: %w", err)
		}
		if err := s.client.Patch(ctx, lv, client.RawPatch(types.MergePatchType, patch),
			client.FieldOwner(FieldOwner)); err != nil {
			return fmt.Errorf("patch ioLimits of LogicalVolume %s: %w", lv.Name, err)
		}
		gen = lv.Generation
		ctrl.LoggerFrom(ctx).Info("Modifying LogicalVolume", "logicalVolume", lv.Name, "ioLimits", want)
	} else if want == nil && meta.FindStatusCondition(lv.Status.Conditions, topolvmv1.ConditionIOLimited) == nil {
		return nil // never capped, nothing asked
	}
	_, err = s.waitFor(ctx, lv.Name, "modified", func(cur *topolvmv1.LogicalVolume) (bool, error) {
		return ioLimitsApplied(cur, id, gen)
	})
	return err
}

// ioLimitsApplied reports whether the node has put generation gen's caps in force. A node that
// reconciled the generation without reporting IOLimited runs an agent that cannot apply them.
func ioLimitsApplied(cur *topolvmv1.LogicalVolume, id string, gen int64) (bool, error) {
	if cur == nil {
		return false, fmt.Errorf("volume %s was deleted during the modification: %w", id, errNotFound)
	}
	c := meta.FindStatusCondition(cur.Status.Conditions, topolvmv1.ConditionIOLimited)
	switch {
	case c != nil && c.ObservedGeneration >= gen && c.Status == "True":
		return true, nil
	case c != nil && c.ObservedGeneration >= gen:
		return true, &nodeError{code: codes.Internal, message: c.Message}
	case cur.Status.ObservedGeneration >= gen:
		return true, &nodeError{code: codes.FailedPrecondition, message: fmt.Sprintf(
			"the node agent of node %s reconciled generation %d of LogicalVolume %s without applying "+
				"spec.ioLimits: it is a version without VolumeAttributesClass support", cur.Spec.NodeName, gen, cur.Name)}
	}
	err := nodeFailure(cur)
	return err != nil, err
}
