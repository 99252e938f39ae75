package exec

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the host command metrics.
const (
	MetricCommandsTotal   = "lvms_host_commands_total"
	MetricCommandDuration = "lvms_host_command_duration_seconds"
)

// Results of a command, the result label of the metrics.
const (
	ResultOK      = "ok"
	ResultFailed  = "failed"  // ran and exited non-zero, or its output could not be read
	ResultTimeout = "timeout" // killed at its deadline (Host.Timeout)
	ResultAborted = "aborted" // the caller's context ended first
)

// Metrics counts and times every command an instrumented Executor runs, by command and result:
// lvms_host_commands_total and lvms_host_command_duration_seconds. The command label is the
// program, or for lvm its subcommand (lvcreate, fullreport, ...), so lvm2's operations show apart.
type Metrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics returns unregistered metrics; register Collectors() once per process.
func NewMetrics() *Metrics {
	return &Metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricCommandsTotal,
			Help: "Host commands (lvm2 subcommands, blkid, wipefs, mkfs, mount, ...) run, by command and result.",
		}, []string{"command", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricCommandDuration,
			Help:    "Duration of host commands, by command and result.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"command", "result"}),
	}
}

// Collectors returns the collectors to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.total, m.duration}
}

// Instrument returns e recording every command in m.
func (m *Metrics) Instrument(e Executor) Executor {
	return &instrumented{next: e, m: m}
}

type instrumented struct {
	next Executor
	m    *Metrics
}

func (i *instrumented) Exec(ctx context.Context, cmd Cmd) error {
	start := time.Now()
	err := i.next.Exec(ctx, cmd)
	name, result := commandLabel(cmd), resultOf(ctx, err)
	i.m.total.WithLabelValues(name, result).Inc()
	i.m.duration.WithLabelValues(name, result).Observe(time.Since(start).Seconds())
	return err
}

// commandLabel is the program, or lvm's subcommand.
func commandLabel(cmd Cmd) string {
	if cmd.Name == "lvm" && len(cmd.Args) > 0 {
		return cmd.Args[0]
	}
	return cmd.Name
}

func resultOf(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return ResultOK
	case errors.Is(err, ErrTimeout):
		return ResultTimeout
	case ctx.Err() != nil:
		return ResultAborted
	}
	return ResultFailed
}
