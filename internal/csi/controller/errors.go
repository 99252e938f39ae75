package controller

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
)

// Sentinel errors of the helpers; RPC methods turn them into gRPC codes with rpcError.
var (
	errInvalid       = errors.New("invalid argument")
	errNotFound      = errors.New("not found")
	errAlreadyExists = errors.New("already exists with different parameters")
	errBusy          = errors.New("busy")
	errNoCapacity    = errors.New("no capacity")
)

// nodeError is a failure the node reported in a LogicalVolume's status.
type nodeError struct {
	code    codes.Code
	message string
}

func (e *nodeError) Error() string {
	return fmt.Sprintf("node reported %s: %s", e.code, e.message)
}

// nodeFailure returns the failure the node reported in lv's status for condition condType, or nil.
// status.code (a gRPC code, kept for TopoLVM compatibility) wins; otherwise a False condition of the
// current generation whose reason names a terminal failure counts (see reasonCode).
func nodeFailure(lv *topolvmv1.LogicalVolume, condType string) error {
	if lv.Status.Code != 0 {
		return &nodeError{code: codes.Code(lv.Status.Code), message: lv.Status.Message}
	}
	c := meta.FindStatusCondition(lv.Status.Conditions, condType)
	if c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration < lv.Generation {
		return nil
	}
	if code, ok := reasonCode(c.Reason); ok {
		return &nodeError{code: code, message: c.Message}
	}
	return nil
}

// reasonCode maps the condition reasons that mean "this request cannot succeed as asked" to gRPC
// codes. Other reasons (in progress, retrying) keep the caller waiting.
func reasonCode(reason string) (codes.Code, bool) {
	switch reason {
	case "InsufficientCapacity", "NoSpace", "ResourceExhausted":
		return codes.ResourceExhausted, true
	case "InvalidArgument", "DeviceClassNotFound", "Unsupported":
		return codes.InvalidArgument, true
	case "SourceNotFound", "NotFound":
		return codes.NotFound, true
	case "Failed", "Internal":
		return codes.Internal, true
	default:
		return codes.OK, false
	}
}

// rpcError maps an error of a helper to a gRPC status error.
func rpcError(err error) error {
	var ne *nodeError
	var notStarted *cache.ErrCacheNotStarted
	code := codes.Internal
	switch {
	case errors.As(err, &ne):
		code = ne.code
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, errInvalid), errors.Is(err, lvmcsi.ErrInvalidCapability):
		code = codes.InvalidArgument
	case errors.Is(err, lvmcsi.ErrOutOfRange):
		code = codes.OutOfRange
	case errors.Is(err, errNotFound):
		code = codes.NotFound
	case errors.Is(err, errAlreadyExists):
		code = codes.AlreadyExists
	case errors.Is(err, errBusy):
		code = codes.Aborted
	case errors.Is(err, errNoCapacity):
		code = codes.ResourceExhausted
	case errors.As(err, &notStarted):
		code = codes.Unavailable
	}
	return status.Error(code, err.Error())
}

// aborted is the answer to a call on a volume another call is working on.
func aborted(id string) error {
	return status.Errorf(codes.Aborted, "an operation on %s is already in progress", id)
}
