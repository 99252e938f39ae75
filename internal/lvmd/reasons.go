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
//   - Code: the gRPC code lvmd answers with, which the LogicalVolume reconciler writes to
//     status.code and the CSI controller returns (the external-provisioner puts it, with the
//     message, in the PVC's ProvisioningFailed event),
//   - Info: the google.rpc.ErrorInfo reason the server sends and the Client restores the sentinel
//     from (no message parsing),
//   - Condition and Retry: the LogicalVolume condition reason, and whether the reconciler retries
//     the same spec (space may be freed, a VG created) or waits for a new one.
//
// Code, Info, Condition and Retry are the row's Reason, which Describe returns.
//
// The first matching row wins: the more specific sentinels come first (ErrUnknownDeviceClass is
// also ErrInvalidArgument, ErrClassesPending also ErrNotReady).
var reasons = []struct {
	err error
	lvm func(error) bool
	Reason
}{
	{context.Canceled, nil, Reason{"CANCELED", codes.Canceled, ConditionFailed, true}},
	{context.DeadlineExceeded, nil, Reason{"DEADLINE_EXCEEDED", codes.DeadlineExceeded, ConditionFailed, true}},
	// A VG with a missing PV takes nothing (lvm2 refuses every allocation in it): the class offers 0
	// (capacity.go), and a create that got there is told so, to be placed elsewhere.
	{ErrInsufficientCapacity, func(err error) bool { return lvm.IsInsufficientSpace(err) || lvm.IsMissingPVs(err) },
		Reason{"INSUFFICIENT_CAPACITY", codes.ResourceExhausted, ConditionInsufficientCapacity, true}},
	{ErrNotFound, lvm.IsNotFound, Reason{"NOT_FOUND", codes.NotFound, ConditionNotFound, true}},
	{
		ErrAlreadyExists,
		lvm.IsAlreadyExists,
		Reason{"ALREADY_EXISTS", codes.AlreadyExists, ConditionAlreadyExists, false},
	},
	{ErrInUse, lvm.IsInUse, Reason{"IN_USE", codes.FailedPrecondition, ConditionFailed, true}},
	{ErrNotOurs, lvm.IsNotOurs, Reason{"NOT_OURS", codes.FailedPrecondition, ConditionNotOwned, false}},
	{ErrUnknownDeviceClass, nil,
		Reason{"UNKNOWN_DEVICE_CLASS", codes.InvalidArgument, ConditionDeviceClassNotFound, false}},
	{ErrInvalidArgument, lvm.IsInvalidArgument,
		Reason{"INVALID_ARGUMENT", codes.InvalidArgument, ConditionInvalidArgument, false}},
	{ErrClassesPending, nil, Reason{"CLASSES_PENDING", codes.Unavailable, ConditionDeviceClassNotReady, true}},
	{ErrNotReady, nil, Reason{"NOT_READY", codes.Unavailable, ConditionDeviceClassNotReady, true}},
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
			return r.Reason
		}
	}
	return Reason{Code: codes.Internal, Condition: ConditionFailed, Retry: true}
}

// Reasons lists the table's rows, for tests that walk every reason through the layers above lvmd.
func Reasons() []Reason {
	out := make([]Reason, 0, len(reasons))
	for _, r := range reasons {
		out = append(out, r.Reason)
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
		st := status.New(r.Code, err.Error())
		if withInfo, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: r.Info, Domain: errorDomain}); derr == nil {
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
			if r.Info == info.GetReason() {
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
