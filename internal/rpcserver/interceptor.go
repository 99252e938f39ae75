package rpcserver

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"github.com/kubernetes-csi/csi-lib-utils/protosanitizer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	ctrl "sigs.k8s.io/controller-runtime"
)

// UnaryLogger returns an interceptor that puts log (with the method) into the call's context, so RPC
// methods log through ctrl.LoggerFrom(ctx), and logs every call with its latency and its request and
// response stripped of secrets. Failed calls are logged at level 0, successful ones at verbosity 1.
func UnaryLogger(log logr.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		l := log.WithValues("method", info.FullMethod)
		start := time.Now()
		resp, err := handler(ctrl.LoggerInto(ctx, l), req)
		latency := time.Since(start)
		if err != nil {
			l.Error(err, "GRPC call failed", "code", status.Code(err).String(), "latency", latency,
				"request", protosanitizer.StripSecrets(req))
			return resp, err
		}
		l.V(1).Info("GRPC call", "latency", latency, "request", protosanitizer.StripSecrets(req),
			"response", protosanitizer.StripSecrets(resp))
		return resp, nil
	}
}

// StreamLogger is UnaryLogger for streaming calls (method and latency only).
func StreamLogger(log logr.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		l := log.WithValues("method", info.FullMethod)
		start := time.Now()
		err := handler(srv, &loggedStream{ServerStream: ss, ctx: ctrl.LoggerInto(ss.Context(), l)})
		if err != nil {
			l.Error(err, "GRPC stream failed", "code", status.Code(err).String(), "latency", time.Since(start))
			return err
		}
		l.V(1).Info("GRPC stream", "latency", time.Since(start))
		return nil
	}
}

// loggedStream carries the logger-enriched context to stream handlers.
type loggedStream struct {
	grpc.ServerStream
	ctx context.Context //nolint:containedctx // grpc.ServerStream exposes its context through Context()
}

func (s *loggedStream) Context() context.Context { return s.ctx }
