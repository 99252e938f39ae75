package snapmeta

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
)

// codeOf is the gRPC code of a failure of the thin metadata read.
var codeOf = []struct {
	err  error
	code codes.Code
}{
	{thinmeta.ErrDifferentVolumes, codes.InvalidArgument},
	{thinmeta.ErrDifferentPools, codes.InvalidArgument},
	{thinmeta.ErrNotThin, codes.InvalidArgument},
	{thinmeta.ErrInvalidArgument, codes.InvalidArgument},
	{thinmeta.ErrNotFound, codes.NotFound},
	{thinmeta.ErrMetadataSnapshotHeld, codes.Unavailable},
	{thinmeta.ErrPoolInactive, codes.Unavailable},
	{thinmeta.ErrHoldDeadline, codes.DeadlineExceeded},
	{context.Canceled, codes.Canceled},
	{context.DeadlineExceeded, codes.DeadlineExceeded},
}

// rpcError maps err to a gRPC status error: a status already in it (a failed stream.Send, say) is
// kept, the errors of package thinmeta and of the context get their codes, anything else is
// Internal. nil stays nil.
func rpcError(err error) error {
	if err == nil {
		return nil
	}
	var st interface{ GRPCStatus() *status.Status }
	if errors.As(err, &st) {
		return status.Error(st.GRPCStatus().Code(), err.Error())
	}
	for _, c := range codeOf {
		if errors.Is(err, c.err) {
			return status.Error(c.code, err.Error())
		}
	}
	return status.Error(codes.Internal, err.Error())
}
