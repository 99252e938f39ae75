package lvmd

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errorDomain is the google.rpc.ErrorInfo domain of lvmd's failures.
const errorDomain = "lvmd.topolvm.io"

// reasons is lvmd's one table of failures: each sentinel with its gRPC code and the reason the
// server puts in the status as google.rpc.ErrorInfo, from which the Client restores the sentinel
// (no message parsing). The more specific sentinels come first: ErrUnknownDeviceClass is also
// ErrInvalidArgument, ErrClassesPending also ErrNotReady.
var reasons = []struct {
	err    error
	code   codes.Code
	reason string
}{
	{context.Canceled, codes.Canceled, "CANCELED"},
	{context.DeadlineExceeded, codes.DeadlineExceeded, "DEADLINE_EXCEEDED"},
	{ErrUnknownDeviceClass, codes.InvalidArgument, "UNKNOWN_DEVICE_CLASS"},
	{ErrInvalidArgument, codes.InvalidArgument, "INVALID_ARGUMENT"},
	{ErrInsufficientCapacity, codes.ResourceExhausted, "INSUFFICIENT_CAPACITY"},
	{ErrNotFound, codes.NotFound, "NOT_FOUND"},
	{ErrAlreadyExists, codes.AlreadyExists, "ALREADY_EXISTS"},
	{ErrNotOurs, codes.FailedPrecondition, "NOT_OURS"},
	{ErrInUse, codes.FailedPrecondition, "IN_USE"},
	{ErrClassesPending, codes.Unavailable, "CLASSES_PENDING"},
	{ErrNotReady, codes.Unavailable, "NOT_READY"},
}

// Code is the gRPC code of a service error by the table; codes.Internal for an error outside it.
// The LogicalVolume reconciler writes it to status.code, which the CSI controller returns.
func Code(err error) codes.Code {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.code
		}
	}
	return codes.Internal
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
		if withInfo, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: r.reason, Domain: errorDomain}); derr == nil {
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
			if r.reason == info.GetReason() {
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
