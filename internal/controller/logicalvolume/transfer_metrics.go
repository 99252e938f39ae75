package logicalvolume

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

// Metrics of copies from other nodes, exported by the target node's agent (docs/mobility.md). The
// per-volume gauges exist while a copy runs.
var (
	transferReceived = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "lvms_transfer_received_bytes_total",
		Help: "Bytes this node's agent copied from other nodes, written and verified.",
	})
	transferAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lvms_transfer_attempts_total",
		Help: "Copy attempts from other nodes by result (complete, failed, canceled).",
	}, []string{"result"})
	transferVerified = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "lvms_transfer_verified_offset_bytes",
		Help: "How far a running copy got: every byte below this offset of the volume is copied and verified.",
	}, []string{"logical_volume", "source_node"})
	transferSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "lvms_transfer_size_bytes",
		Help: "The size of the volume a running copy fills.",
	}, []string{"logical_volume", "source_node"})
	transferRate = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "lvms_transfer_rate_bytes_per_second",
		Help: "Bytes per second a running copy moves (its current attempt).",
	}, []string{"logical_volume", "source_node"})
	transferRemaining = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "lvms_transfer_remaining_seconds",
		Help: "Estimated seconds until a running copy completes, from its progress through the volume so far.",
	}, []string{"logical_volume", "source_node"})
)

// TransferCollectors are the metrics of copies from other nodes, for the agent's registry.
func TransferCollectors() []prometheus.Collector {
	return []prometheus.Collector{transferReceived, transferAttempts, transferVerified, transferSize, transferRate,
		transferRemaining}
}

// attemptMeter follows one attempt's progress into the metrics.
type attemptMeter struct {
	labels prometheus.Labels
	size   uint64
	start  time.Time
	from   transfer.Progress
	last   transfer.Progress
}

func newAttemptMeter(name, sourceNode string, size uint64, from transfer.Progress) *attemptMeter {
	m := &attemptMeter{labels: prometheus.Labels{"logical_volume": name, "source_node": sourceNode}, size: size,
		start: time.Now(), from: from, last: from}
	transferSize.With(m.labels).Set(float64(size))
	transferVerified.With(m.labels).Set(float64(from.Offset))
	return m
}

// progress records a checkpoint.
func (m *attemptMeter) progress(p transfer.Progress) {
	if p.Bytes > m.last.Bytes {
		transferReceived.Add(float64(p.Bytes - m.last.Bytes))
	}
	m.last = p
	transferVerified.With(m.labels).Set(float64(p.Offset))
	elapsed := time.Since(m.start).Seconds()
	if elapsed <= 0 || p.Offset <= m.from.Offset {
		return
	}
	transferRate.With(m.labels).Set(float64(p.Bytes-m.from.Bytes) / elapsed)
	// The offset moves through holes of a thin source for free: estimate from the offset's pace.
	pace := float64(p.Offset-m.from.Offset) / elapsed
	transferRemaining.With(m.labels).Set(float64(m.size-min(m.size, p.Offset)) / pace)
}

// end records the attempt's result and drops its gauges.
func (m *attemptMeter) end(p transfer.Progress, err error, canceled bool) {
	m.progress(p)
	result := "failed"
	switch {
	case canceled:
		result = "canceled"
	case err == nil && p.Complete:
		result = "complete"
	}
	transferAttempts.WithLabelValues(result).Inc()
	for _, g := range []*prometheus.GaugeVec{transferVerified, transferSize, transferRate, transferRemaining} {
		g.Delete(m.labels)
	}
}
