package csi

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestUnaryMetrics: each call is counted under its method's short name and its gRPC code.
func TestUnaryMetrics(t *testing.T) {
	in := UnaryMetrics()
	info := &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/CreateVolume"}
	ok := func(context.Context, any) (any, error) { return "done", nil }
	full := func(context.Context, any) (any, error) { return nil, status.Error(codes.ResourceExhausted, "no space") }
	okBefore := testutil.ToFloat64(operations.WithLabelValues("CreateVolume", "OK"))
	fullBefore := testutil.ToFloat64(operations.WithLabelValues("CreateVolume", "ResourceExhausted"))
	for range 2 {
		if _, err := in(t.Context(), nil, info, ok); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := in(t.Context(), nil, info, full); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("the handler's error must pass through: %v", err)
	}
	if d := testutil.ToFloat64(operations.WithLabelValues("CreateVolume", "OK")) - okBefore; d != 2 {
		t.Errorf("OK counted %v times, want 2", d)
	}
	if d := testutil.ToFloat64(operations.WithLabelValues("CreateVolume", "ResourceExhausted")) - fullBefore; d != 1 {
		t.Errorf("ResourceExhausted counted %v times, want 1", d)
	}
}
