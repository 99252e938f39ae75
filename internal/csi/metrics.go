package csi

import (
	"context"
	"path"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lvm-operator/lvm-operator/internal/rpcserver"
)

// Names of the CSI metrics.
const (
	MetricOperationsTotal   = "lvms_csi_operations_total"
	MetricOperationDuration = "lvms_csi_operation_duration_seconds"
	MetricPhaseDuration     = "lvms_csi_phase_duration_seconds"
)

var (
	operations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricOperationsTotal,
		Help: "CSI calls served, by method (CreateVolume, NodePublishVolume, ...) and gRPC code (OK, ResourceExhausted, ...).",
	}, []string{"method", "code"})
	operationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MetricOperationDuration,
		Help:    "Duration of CSI calls, by method and gRPC code.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
	}, []string{"method", "code"})
	// PhaseDuration times the phases of the controller's calls: plan (CreateVolume's validation and
	// choice of node), and each wait for the node agent (wait-visible, wait-created, wait-resized,
	// wait-deleted).
	PhaseDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MetricPhaseDuration,
		Help:    "Duration of the phases of CSI controller calls: plan, and the waits for the node agent (wait-created, ...).",
		Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
	}, []string{"phase"})
)

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}

// Collectors returns the CSI metrics (registered on controller-runtime's registry by this package).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{operations, operationDuration, PhaseDuration}
}

// NewServer returns the server of CSI services on endpoint: rpcserver's, every call also counted and
// timed (UnaryMetrics).
func NewServer(endpoint string, log logr.Logger) (*rpcserver.Server, error) {
	return rpcserver.New(endpoint, log, grpc.ChainUnaryInterceptor(UnaryMetrics()))
}

// UnaryMetrics returns an interceptor that counts and times every call by method and code.
func UnaryMetrics() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		method, code := path.Base(info.FullMethod), status.Code(err).String()
		operations.WithLabelValues(method, code).Inc()
		operationDuration.WithLabelValues(method, code).Observe(time.Since(start).Seconds())
		return resp, err
	}
}
