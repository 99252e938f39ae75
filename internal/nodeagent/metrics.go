package nodeagent

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// The node agent serves these metrics as the operator does (cmd/lvms/metrics.go): each scrape's
// token is checked with a TokenReview and its access to /metrics with a SubjectAccessReview.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Metric names, as TopoLVM exports them.
const (
	MetricVolumeGroupAvailableBytes        = "topolvm_volumegroup_available_bytes"
	MetricVolumeGroupSizeBytes             = "topolvm_volumegroup_size_bytes"
	MetricThinPoolSizeBytes                = "topolvm_thinpool_size_bytes"
	MetricThinPoolDataPercent              = "topolvm_thinpool_data_percent"
	MetricThinPoolMetadataPercent          = "topolvm_thinpool_metadata_percent"
	MetricThinPoolOverprovisionedAvailable = "topolvm_thinpool_overprovisioned_available"
)

// Metrics is a Prometheus collector of lvmd's capacities per device class, labelled node and
// device_class, fed from lvmd's Watch stream (Start). The names, labels and values are TopoLVM's:
//
//   - topolvm_volumegroup_size_bytes: the size of the class's volume group, thin classes too;
//   - topolvm_volumegroup_available_bytes: the volume group's free bytes, less the spare for thick
//     classes (what new volumes may take; for RAID classes the largest RAID LV lvm2 can allocate,
//     docs/lvmd.md); for thin classes the volume group's free bytes outside
//     the pool;
//   - topolvm_thinpool_size_bytes, _data_percent, _metadata_percent: the thin pool as lvm2 reports it;
//   - topolvm_thinpool_overprovisioned_available: overprovision ratio × pool size − the virtual sizes
//     of the pool's volumes, what new thin volumes may take (the node's capacity annotation); at most
//     the ratio × the pool's unwritten data space (docs/lvmd.md).
//
// A scrape sees one whole update; classes that are removed, and classes that are not ready, have
// no series.
type Metrics struct {
	node string
	src  CapacityWatcher

	vgAvailable, vgSize, tpSize, tpData, tpMeta, tpAvailable *prometheus.Desc

	mu   sync.Mutex
	caps []lvmd.Capacity
}

var _ prometheus.Collector = (*Metrics)(nil)

// NewMetrics returns the collector of node's capacities, fed by src. Register it (Register) and run it
// (Start, e.g. with the manager).
func NewMetrics(node string, src CapacityWatcher) *Metrics {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"device_class"}, prometheus.Labels{"node": node})
	}
	return &Metrics{
		node: node,
		src:  src,
		vgAvailable: desc(
			MetricVolumeGroupAvailableBytes,
			"Free bytes of the device class's volume group (thick classes: less the spare; RAID: the largest RAID LV).",
		),
		vgSize: desc(MetricVolumeGroupSizeBytes, "Size in bytes of the device class's volume group."),
		tpSize: desc(MetricThinPoolSizeBytes, "Size in bytes of the device class's thin pool."),
		tpData: desc(MetricThinPoolDataPercent, "Data usage of the device class's thin pool in percent."),
		tpMeta: desc(MetricThinPoolMetadataPercent, "Metadata usage of the device class's thin pool in percent."),
		tpAvailable: desc(
			MetricThinPoolOverprovisionedAvailable,
			"Bytes left in the device class's thin pool with overprovisioning.",
		),
	}
}

// Register registers the collector, e.g. on controller-runtime's metrics.Registry.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	if err := reg.Register(m); err != nil {
		return fmt.Errorf("register lvmd capacity metrics: %w", err)
	}
	return nil
}

// NeedLeaderElection is false: every node agent exports its own node's metrics.
func (m *Metrics) NeedLeaderElection() bool { return false }

// Start updates the metrics from lvmd's capacity stream until ctx ends.
func (m *Metrics) Start(ctx context.Context) error {
	for caps := range m.src.Watch(ctx) {
		m.Update(caps)
	}
	return nil
}

// Update replaces the capacities the collector reports.
func (m *Metrics) Update(caps []lvmd.Capacity) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.caps = slices.Clone(caps)
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.vgAvailable, m.vgSize, m.tpSize, m.tpData, m.tpMeta, m.tpAvailable} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	caps := m.caps
	m.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, class string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, class)
	}
	for _, c := range caps {
		if !c.Ready {
			continue
		}
		gauge(m.vgSize, float64(c.VGSizeBytes), c.DeviceClass)
		tp := c.ThinPool
		if tp == nil {
			gauge(m.vgAvailable, float64(c.FreeBytes), c.DeviceClass)
			continue
		}
		gauge(m.vgAvailable, float64(c.VGFreeBytes), c.DeviceClass)
		gauge(m.tpSize, float64(tp.SizeBytes), c.DeviceClass)
		gauge(m.tpData, tp.DataPercent, c.DeviceClass)
		gauge(m.tpMeta, tp.MetadataPercent, c.DeviceClass)
		gauge(m.tpAvailable, float64(c.FreeBytes), c.DeviceClass)
	}
}
