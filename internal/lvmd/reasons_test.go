package lvmd

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// TestReasonsRoundTrip sends every failure of the table through the server's status (as its
// wire form) and the client's mapping: the client gets the same sentinel and the table's code.
func TestReasonsRoundTrip(t *testing.T) {
	for _, r := range reasons {
		t.Run(r.Info, func(t *testing.T) {
			sent := toStatus(fmt.Errorf("create LV x: %w", r.err))
			wire := status.FromProto(status.Convert(sent).Proto())
			if wire.Code() != r.Code {
				t.Fatalf("code %s, want %s", wire.Code(), r.Code)
			}
			got := fromStatus(wire.Err(), "create LV %s", "x")
			if !errors.Is(got, r.err) {
				t.Fatalf("client error %q is not %q", got, r.err)
			}
			for _, other := range reasons {
				if other.Info != r.Info && errors.Is(got, other.err) && !errors.Is(r.err, other.err) {
					t.Errorf("client error %q is also %q", got, other.err)
				}
			}
		})
	}
}

// TestStatusWithoutReason: a status without our ErrorInfo maps to no sentinel, whatever its
// message says (the client does not parse messages), except gRPC's own cancellation codes.
func TestStatusWithoutReason(t *testing.T) {
	for _, st := range []*status.Status{
		status.New(codes.Unavailable, "connection refused"),
		status.New(codes.Unavailable, ErrNotReady.Error()),
		status.New(codes.InvalidArgument, ErrUnknownDeviceClass.Error()),
		status.New(codes.Internal, "boom"),
	} {
		got := fromStatus(st.Err(), "op")
		for _, r := range reasons {
			if errors.Is(got, r.err) {
				t.Errorf("%s %q mapped to %q", st.Code(), st.Message(), r.err)
			}
		}
	}
	if got := fromStatus(status.Error(codes.DeadlineExceeded, "deadline"), "op"); !errors.Is(got, reasons[1].err) {
		t.Errorf("DeadlineExceeded without details: %v", got)
	}
	if got := toStatus(errors.New("unexpected")); status.Code(got) != codes.Internal {
		t.Errorf("an error outside the table: %v", got)
	}
}

// TestMissingPVsIsInsufficientCapacity: lvm2's refusal of a create in a VG with a missing PV is
// reported as the class lacking capacity (the claim goes elsewhere), with lvm2's message kept.
func TestMissingPVsIsInsufficientCapacity(t *testing.T) {
	raw := &exec.Error{Cmd: "lvm", ExitCode: 5, Stderr: "  Cannot change VG graid while PVs are missing.\n" +
		"  See vgreduce --removemissing and vgextend --restoremissing."}
	err := lvmError(fmt.Errorf("create LV x: %w", raw))
	if !errors.Is(err, ErrInsufficientCapacity) || Code(err) != codes.ResourceExhausted {
		t.Fatalf("%v: code %s, want INSUFFICIENT_CAPACITY and ResourceExhausted", err, Code(err))
	}
	if !errors.As(err, new(*exec.Error)) {
		t.Fatalf("%v lost lvm2's error", err)
	}
}
