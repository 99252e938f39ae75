package controller

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

// nodeFailure returns the failure the node reported in lv's status, or nil: status.code, a gRPC
// code (kept for TopoLVM compatibility) that the node writes with every failure, from lvmd's reason
// table (internal/lvmd reasons.go) through the LogicalVolume reconciler. The condition's reason is
// for people; the code is the one path to the CSI error.
func nodeFailure(lv *topolvmv1.LogicalVolume) error {
	if lv.Status.Code == 0 {
		return nil
	}
	return &nodeError{code: codes.Code(lv.Status.Code), message: lv.Status.Message}
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
