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

// IOLimits applies the IO caps among mutable parameters to cur (nil: none yet) and returns the
// result, nil when it caps nothing. Only the keys given change (the CSI spec: a key left out is left
// as it is); "max" removes a cap. An unknown key or a value that is not a positive whole number is
// errInvalid: a class this driver cannot apply in full is refused, never applied in part.
func IOLimits(params map[string]string, cur *topolvmv1.IOLimits) (*topolvmv1.IOLimits, error) {
	out := topolvmv1.IOLimits{}
	if cur != nil {
		out = *cur
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if k == driver.ParamReadAhead {
			continue // ReadAhead's
		}
		i := slices.IndexFunc(ioLimitParams, func(p ioLimitParam) bool { return p.key == k })
		if i < 0 {
			return nil, fmt.Errorf("%w: mutable parameter %q is not one this driver can change (%s)", errInvalid, k,
				"topolvm.io/read-bps, write-bps, read-iops, write-iops, read-ahead")
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

// maxReadAheadSectors is the largest read-ahead lvm2 keeps (32 bits, the top two values meaning
// auto and none).
const maxReadAheadSectors = 1<<32 - 3

// ReadAhead is spec.readAhead after the mutable parameters: cur when they leave it out, else the
// parameter as lvm2 takes it, "auto", "none" or 512-byte sectors from a byte quantity ("1Mi") that
// is a multiple of 512. Any other value is errInvalid.
func ReadAhead(params map[string]string, cur string) (string, error) {
	v, ok := params[driver.ParamReadAhead]
	switch {
	case !ok:
		return cur, nil
	case v == "auto" || v == "none":
		return v, nil
	}
	q, err := resource.ParseQuantity(v)
	n, whole := wholeBytes(q)
	switch {
	case err != nil || q.Sign() < 0 || !whole:
		return "", fmt.Errorf("%w: mutable parameter %s: %q is not auto, none or a quantity of bytes",
			errInvalid, driver.ParamReadAhead, v)
	case n%512 != 0 || n/512 > maxReadAheadSectors:
		return "", fmt.Errorf("%w: mutable parameter %s: %q is not a multiple of 512 bytes up to %d sectors",
			errInvalid, driver.ParamReadAhead, v, int64(maxReadAheadSectors))
	case n == 0:
		return "none", nil
	}
	return strconv.FormatInt(n/512, 10), nil
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
	n, ok := wholeBytes(q)
	if !ok {
		return 0, fmt.Errorf("%q is not a whole number of bytes", v)
	}
	return n, nil
}

// wholeBytes is q as a whole number of bytes; false when it has a fraction ("0.5Ki" is 512).
func wholeBytes(q resource.Quantity) (int64, bool) {
	n := q.Value()
	return n, q.Cmp(*resource.NewQuantity(n, resource.BinarySI)) == 0
}

// ControllerModifyVolume applies the mutable parameters of a VolumeAttributesClass: it records the
// IO caps in spec.ioLimits and the read-ahead in spec.readAhead of the LogicalVolume, and waits until
// the volume's node reports them in force (conditions IOLimited, in every pod that uses the volume,
// and ReadAheadSet, on the LV, of the new generation).
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
	limits, err := IOLimits(params, lv.Spec.IOLimits)
	if err != nil {
		return err
	}
	readAhead, err := ReadAhead(params, lv.Spec.ReadAhead)
	if err != nil {
		return err
	}
	change := map[string]any{}
	if !ptr.Equal(limits, lv.Spec.IOLimits) {
		change["ioLimits"] = limits
	}
	if readAhead != lv.Spec.ReadAhead {
		change["readAhead"] = readAhead
	}
	if len(change) > 0 {
		patch, err := json.Marshal(map[string]any{"spec": change})
		if err != nil {
			return fmt.Errorf("encode the LogicalVolume patch: %w", err)
		}
		if err := s.client.Patch(ctx, lv, client.RawPatch(types.MergePatchType, patch),
			client.FieldOwner(FieldOwner)); err != nil {
			return fmt.Errorf("patch LogicalVolume %s: %w", lv.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Modifying LogicalVolume", "logicalVolume", lv.Name, "ioLimits", limits,
			"readAhead", readAhead)
	}
	var wait []modification
	if limits != nil || meta.FindStatusCondition(lv.Status.Conditions, topolvmv1.ConditionIOLimited) != nil {
		wait = append(wait, modification{topolvmv1.ConditionIOLimited, "spec.ioLimits"})
	}
	if readAhead != "" {
		wait = append(wait, modification{topolvmv1.ConditionReadAheadSet, "spec.readAhead"})
	}
	if len(wait) == 0 {
		return nil // never changed, nothing asked
	}
	gen := lv.Generation
	_, err = s.waitFor(ctx, lv.Name, "modified", func(cur *topolvmv1.LogicalVolume) (bool, error) {
		for _, m := range wait {
			if done, err := m.applied(cur, id, gen); !done || err != nil {
				return done, err
			}
		}
		return true, nil
	})
	return err
}

// modification is a change of a LogicalVolume's spec field that the node reports done with a
// condition of the generation.
type modification struct {
	condition, field string
}

// applied reports whether the node has put generation gen's field in force. A node that reconciled
// the generation without reporting the condition runs an agent that cannot apply the field.
func (m modification) applied(cur *topolvmv1.LogicalVolume, id string, gen int64) (bool, error) {
	if cur == nil {
		return false, fmt.Errorf("volume %s was deleted during the modification: %w", id, errNotFound)
	}
	c := meta.FindStatusCondition(cur.Status.Conditions, m.condition)
	switch {
	case c != nil && c.ObservedGeneration >= gen && c.Status == "True":
		return true, nil
	case c != nil && c.ObservedGeneration >= gen:
		if err := nodeFailure(cur); err != nil {
			return true, err // the failure's code (FailedPrecondition for an LV lvm2 cannot change now)
		}
		return true, &nodeError{code: codes.Internal, message: c.Message}
	case cur.Status.ObservedGeneration >= gen:
		return true, &nodeError{code: codes.FailedPrecondition, message: fmt.Sprintf(
			"the node agent of node %s reconciled generation %d of LogicalVolume %s without applying "+
				"%s: it is a version without VolumeAttributesClass support for it", cur.Spec.NodeName, gen,
			cur.Name, m.field)}
	}
	err := nodeFailure(cur)
	return err != nil, err
}
