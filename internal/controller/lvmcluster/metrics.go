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
	// LVMS's RAID metrics (its vg-manager exports them per node; ours come from the node statuses).
	MetricRAIDHealthStatus   = "lvms_raid_health_status"
	MetricRAIDSyncInProgress = "lvms_raid_sync_in_progress"
	MetricRAIDMemberCount    = "lvms_raid_member_count"
	MetricRAIDDegradedCount  = "lvms_raid_degraded_count"
	MetricRAIDMinSyncPercent = "lvms_raid_sync_percent"
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
//   - lvms_logical_volumes{node, device_class}: LogicalVolumes, i.e. volumes, per node and class;
//   - for RAID device classes, LVMS's lvms_raid_health_status{node, device_class} (0 Healthy, 1
//     Degraded, 2 Failed), lvms_raid_sync_in_progress (1 while a RAID LV is not fully in sync),
//     lvms_raid_member_count and lvms_raid_degraded_count (PVs, and missing ones) and
//     lvms_raid_sync_percent (the lowest sync progress of its RAID LVs; absent without RAID LVs).
type Collector struct {
	reader    client.Reader
	namespace string

	cluster, vg, devices, lvs                                    *prometheus.Desc
	raidHealth, raidSyncing, raidMembers, raidDegraded, raidSync *prometheus.Desc
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
		raidHealth: nodeClassDesc(MetricRAIDHealthStatus,
			"RAID health of a device class's volume group on a node: 0 healthy, 1 degraded, 2 failed."),
		raidSyncing: nodeClassDesc(MetricRAIDSyncInProgress,
			"1 while a RAID LV of the device class's volume group is not fully in sync, else 0."),
		raidMembers: nodeClassDesc(MetricRAIDMemberCount, "Physical volumes of the RAID volume group."),
		raidDegraded: nodeClassDesc(MetricRAIDDegradedCount,
			"Missing physical volumes of the RAID volume group."),
		raidSync: nodeClassDesc(MetricRAIDMinSyncPercent,
			"Lowest resynchronization progress (0-100) of the RAID LVs of the device class's volume group."),
	}
}

func nodeClassDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, []string{"node", "device_class"}, nil)
}

// raidHealthValue is lvms_raid_health_status's value of a health.
var raidHealthValue = map[lvmv1alpha1.RAIDHealth]float64{
	lvmv1alpha1.RAIDHealthy: 0, lvmv1alpha1.RAIDDegraded: 1, lvmv1alpha1.RAIDFailed: 2,
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.cluster, c.vg, c.devices, c.lvs, c.raidHealth, c.raidSyncing,
		c.raidMembers, c.raidDegraded, c.raidSync} {
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
			if vg.RAIDStatus != nil {
				c.collectRAID(ch, r.Name, vg.Name, vg.RAIDStatus)
			}
		}
	}
}

func (c *Collector) collectRAID(ch chan<- prometheus.Metric, node, class string, rs *lvmv1alpha1.RAIDStatus) {
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, node, class)
	}
	gauge(c.raidHealth, raidHealthValue[rs.Status])
	syncing := 0.0
	if rs.MinSyncPercent != nil {
		gauge(c.raidSync, float64(*rs.MinSyncPercent))
		if *rs.MinSyncPercent < 100 {
			syncing = 1
		}
	}
	gauge(c.raidSyncing, syncing)
	gauge(c.raidMembers, float64(rs.MemberCount))
	gauge(c.raidDegraded, float64(rs.DegradedMemberCount))
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
