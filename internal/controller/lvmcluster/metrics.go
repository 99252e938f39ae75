package lvmcluster

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// Names of the operator's metrics.
const (
	MetricClusterState     = "lvms_lvmcluster_state"
	MetricVolumeGroupState = "lvms_volume_group_state"
	MetricDevices          = "lvms_devices"
	MetricLogicalVolumes   = "lvms_logical_volumes"
)

// collectTimeout bounds one scrape's reads of the cache.
const collectTimeout = 5 * time.Second

// Collector exports what the operator sees of the cluster's storage, read from its cache at each
// scrape:
//
//   - lvms_lvmcluster_state{lvmcluster, state}: 1 for the LVMCluster's current state;
//   - lvms_volume_group_state{node, device_class, state}: 1 for each volume group's current state;
//   - lvms_devices{node, device_class, verdict}: the disks the device filter let a volume group use
//     (verdict "used") and those it excluded ("excluded"), from the nodes' reports;
//   - lvms_logical_volumes{node, device_class}: LogicalVolumes, i.e. volumes, per node and class.
type Collector struct {
	reader    client.Reader
	namespace string

	cluster, vg, devices, lvs *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns the collector reading from r (the manager's cache) in the operator namespace.
func NewCollector(r client.Reader, namespace string) *Collector {
	return &Collector{
		reader: r, namespace: namespace,
		cluster: prometheus.NewDesc(MetricClusterState,
			"1 for the current state of the LVMCluster (Ready, Progressing, Degraded, Failed).",
			[]string{"lvmcluster", "state"}, nil),
		vg: prometheus.NewDesc(MetricVolumeGroupState,
			"1 for the current state of each device class's volume group on each node.",
			[]string{"node", "device_class", "state"}, nil),
		devices: prometheus.NewDesc(
			MetricDevices,
			"Disks of a node that a device class uses (verdict used) or that the device filter excluded (verdict excluded).",
			[]string{"node", "device_class", "verdict"},
			nil,
		),
		lvs: prometheus.NewDesc(MetricLogicalVolumes,
			"LogicalVolumes (one per volume, snapshot or clone) per node and device class.",
			[]string{"node", "device_class"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.cluster, c.vg, c.devices, c.lvs} {
		ch <- d
	}
}

// Collect implements prometheus.Collector; a family whose objects cannot be read is reported as an
// invalid metric (the scrape fails rather than showing zeros).
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	c.collectClusters(ctx, ch)
	c.collectDevices(ctx, ch)
	c.collectLVs(ctx, ch)
}

func (c *Collector) collectClusters(ctx context.Context, ch chan<- prometheus.Metric) {
	var list lvmv1alpha1.LVMClusterList
	if err := c.reader.List(ctx, &list, client.InNamespace(c.namespace)); err != nil {
		ch <- prometheus.NewInvalidMetric(c.cluster, err)
		return
	}
	for _, lc := range list.Items {
		if lc.Status.State != "" {
			ch <- prometheus.MustNewConstMetric(c.cluster, prometheus.GaugeValue, 1, lc.Name, string(lc.Status.State))
		}
		for _, dcs := range lc.Status.DeviceClassStatuses {
			for _, ns := range dcs.NodeStatus {
				ch <- prometheus.MustNewConstMetric(c.vg, prometheus.GaugeValue, 1, ns.Node, dcs.Name, string(ns.Status))
			}
		}
	}
}

func (c *Collector) collectDevices(ctx context.Context, ch chan<- prometheus.Metric) {
	var list lvmv1alpha1.LVMVolumeGroupNodeStatusList
	if err := c.reader.List(ctx, &list, client.InNamespace(c.namespace)); err != nil {
		ch <- prometheus.NewInvalidMetric(c.devices, err)
		return
	}
	for _, r := range list.Items {
		for _, vg := range r.Spec.LiveNodeStatus {
			ch <- prometheus.MustNewConstMetric(c.devices, prometheus.GaugeValue, float64(len(vg.Devices)),
				r.Name, vg.Name, "used")
			ch <- prometheus.MustNewConstMetric(c.devices, prometheus.GaugeValue, float64(len(vg.Excluded)),
				r.Name, vg.Name, "excluded")
		}
	}
}

func (c *Collector) collectLVs(ctx context.Context, ch chan<- prometheus.Metric) {
	var list topolvmv1.LogicalVolumeList
	if err := c.reader.List(ctx, &list); err != nil {
		ch <- prometheus.NewInvalidMetric(c.lvs, err)
		return
	}
	type key struct{ node, class string }
	counts := map[key]int{}
	for _, lv := range list.Items {
		counts[key{lv.Spec.NodeName, lv.Spec.DeviceClass}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.lvs, prometheus.GaugeValue, float64(n), k.node, k.class)
	}
}
