package lvmd

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// errorDomain is the google.rpc.ErrorInfo domain of lvmd's failures.
const errorDomain = "lvmd.topolvm.io"

// Condition reasons of a LogicalVolume that failed, by the table below. The LogicalVolume reconciler
// writes them to its conditions beside status.code.
const (
	ConditionFailed               = "Failed"
	ConditionInsufficientCapacity = "InsufficientCapacity"
	ConditionNotFound             = "NotFound"
	ConditionAlreadyExists        = "AlreadyExists"
	ConditionNotOwned             = "NotOwned"
	ConditionDeviceClassNotFound  = "DeviceClassNotFound"
	ConditionInvalidArgument      = "InvalidArgument"
	ConditionDeviceClassNotReady  = "DeviceClassNotReady"
)

// reasons is the one table of failures, from lvm2 to the PVC: each of lvmd's sentinels with
//   - lvm: the internal/lvm failure (classified from lvm2's exit status and stderr) it stands for,
//   - code: the gRPC code lvmd answers with, which the LogicalVolume reconciler writes to
//     status.code and the CSI controller returns (the external-provisioner puts it, with the
//     message, in the PVC's ProvisioningFailed event),
//   - info: the google.rpc.ErrorInfo reason the server sends and the Client restores the sentinel
//     from (no message parsing),
//   - condition and retry: the LogicalVolume condition reason, and whether the reconciler retries
//     the same spec (space may be freed, a VG created) or waits for a new one.
//
// The first matching row wins: the more specific sentinels come first (ErrUnknownDeviceClass is
// also ErrInvalidArgument, ErrClassesPending also ErrNotReady).
var reasons = []struct {
	err       error
	lvm       func(error) bool
	code      codes.Code
	info      string
	condition string
	retry     bool
}{
	{context.Canceled, nil, codes.Canceled, "CANCELED", ConditionFailed, true},
	{context.DeadlineExceeded, nil, codes.DeadlineExceeded, "DEADLINE_EXCEEDED", ConditionFailed, true},
	{ErrInsufficientCapacity, lvm.IsInsufficientSpace, codes.ResourceExhausted, "INSUFFICIENT_CAPACITY",
		ConditionInsufficientCapacity, true},
	{ErrNotFound, lvm.IsNotFound, codes.NotFound, "NOT_FOUND", ConditionNotFound, true},
	{ErrAlreadyExists, lvm.IsAlreadyExists, codes.AlreadyExists, "ALREADY_EXISTS", ConditionAlreadyExists, false},
	{ErrInUse, lvm.IsInUse, codes.FailedPrecondition, "IN_USE", ConditionFailed, true},
	{ErrNotOurs, lvm.IsNotOurs, codes.FailedPrecondition, "NOT_OURS", ConditionNotOwned, false},
	{ErrUnknownDeviceClass, nil, codes.InvalidArgument, "UNKNOWN_DEVICE_CLASS", ConditionDeviceClassNotFound, false},
	{
		ErrInvalidArgument,
		lvm.IsInvalidArgument,
		codes.InvalidArgument,
		"INVALID_ARGUMENT",
		ConditionInvalidArgument,
		false,
	},
	{ErrClassesPending, nil, codes.Unavailable, "CLASSES_PENDING", ConditionDeviceClassNotReady, true},
	{ErrNotReady, nil, codes.Unavailable, "NOT_READY", ConditionDeviceClassNotReady, true},
}

// Reason is how a failure of the service is reported, by the table: the ErrorInfo reason ("" for an
// error outside the table), the gRPC code, the LogicalVolume condition reason, and whether retrying
// the same request can succeed.
type Reason struct {
	Info      string
	Code      codes.Code
	Condition string
	Retry     bool
}

// Describe reports err by the table; an error outside it is Internal, Failed and retried.
func Describe(err error) Reason {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return Reason{Info: r.info, Code: r.code, Condition: r.condition, Retry: r.retry}
		}
	}
	return Reason{Code: codes.Internal, Condition: ConditionFailed, Retry: true}
}

// Reasons lists the table's rows, for tests that walk every reason through the layers above lvmd.
func Reasons() []Reason {
	out := make([]Reason, 0, len(reasons))
	for _, r := range reasons {
		out = append(out, Reason{Info: r.info, Code: r.code, Condition: r.condition, Retry: r.retry})
	}
	return out
}

// Code is the gRPC code of a service error by the table; codes.Internal for an error outside it.
func Code(err error) codes.Code { return Describe(err).Code }

// lvmError maps an internal/lvm error to the service's sentinel by the table, keeping the original
// in the chain.
func lvmError(err error) error {
	if err == nil {
		return nil
	}
	for _, r := range reasons {
		if r.lvm != nil && r.lvm(err) {
			return fmt.Errorf("%w: %w", r.err, err)
		}
	}
	return err
}

// toStatus is the gRPC status of a service error: the table's code and reason, the error's text
// as the message; codes.Internal without a reason for an error not in the table.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	for _, r := range reasons {
		if !errors.Is(err, r.err) {
			continue
		}
		st := status.New(r.code, err.Error())
		if withInfo, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: r.info, Domain: errorDomain}); derr == nil {
			st = withInfo
		}
		return st.Err()
	}
	return status.Error(codes.Internal, err.Error())
}

// sentinelOf is the sentinel a status stands for: the one named by its ErrorInfo reason; a
// cancellation or deadline raised by gRPC itself (no details) maps to the context's error; any
// other status (a transport failure, say) to none.
func sentinelOf(st *status.Status) error {
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok || info.GetDomain() != errorDomain {
			continue
		}
		for _, r := range reasons {
			if r.info == info.GetReason() {
				return r.err
			}
		}
	}
	switch st.Code() {
	case codes.Canceled:
		return context.Canceled
	case codes.DeadlineExceeded:
		return context.DeadlineExceeded
	}
	return nil
}
