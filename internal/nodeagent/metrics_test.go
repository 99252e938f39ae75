package nodeagent

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

var allMetrics = []string{
	MetricVolumeGroupAvailableBytes, MetricVolumeGroupSizeBytes, MetricThinPoolSizeBytes,
	MetricThinPoolDataPercent, MetricThinPoolMetadataPercent, MetricThinPoolOverprovisionedAvailable,
}

const header = `
# HELP topolvm_thinpool_data_percent Data usage of the device class's thin pool in percent.
# TYPE topolvm_thinpool_data_percent gauge
# HELP topolvm_thinpool_metadata_percent Metadata usage of the device class's thin pool in percent.
# TYPE topolvm_thinpool_metadata_percent gauge
# HELP topolvm_thinpool_overprovisioned_available Bytes left in the device class's thin pool with overprovisioning.
# TYPE topolvm_thinpool_overprovisioned_available gauge
# HELP topolvm_thinpool_size_bytes Size in bytes of the device class's thin pool.
# TYPE topolvm_thinpool_size_bytes gauge
# HELP topolvm_volumegroup_available_bytes Free bytes of the device class's volume group (thick classes: less the spare; RAID: the largest RAID LV).
# TYPE topolvm_volumegroup_available_bytes gauge
# HELP topolvm_volumegroup_size_bytes Size in bytes of the device class's volume group.
# TYPE topolvm_volumegroup_size_bytes gauge
`

// TestMetrics: the series carry TopoLVM's values. A thick class reports its volume group (free less
// the spare as available); a thin class reports its volume group's own size and free bytes under
// topolvm_volumegroup_* and the pool's numbers (overprovisioned capacity left) under
// topolvm_thinpool_*; a class that is not ready has no series.
func TestMetrics(t *testing.T) {
	thick := lvmd.Capacity{DeviceClass: "ssd", Ready: true, FreeBytes: 100, SizeBytes: 1000,
		VGSizeBytes: 1000, VGFreeBytes: 110}
	thin := lvmd.Capacity{DeviceClass: "thin", Ready: true, FreeBytes: 300, SizeBytes: 200,
		VGSizeBytes: 250, VGFreeBytes: 40,
		ThinPool: &lvmd.ThinPoolCapacity{Name: "pool", SizeBytes: 200, DataPercent: 12.5, MetadataPercent: 3.25,
			VirtualBytes: 100, OverprovisionRatio: 2}}
	missing := lvmd.Capacity{DeviceClass: "gone"}
	tests := []struct {
		name    string
		updates [][]lvmd.Capacity
		want    string
	}{
		{name: "nothing before the first update", want: ""},
		{name: "thick and thin classes", updates: [][]lvmd.Capacity{{thick, thin, missing}}, want: header + `
topolvm_thinpool_data_percent{device_class="thin",node="node-a"} 12.5
topolvm_thinpool_metadata_percent{device_class="thin",node="node-a"} 3.25
topolvm_thinpool_overprovisioned_available{device_class="thin",node="node-a"} 300
topolvm_thinpool_size_bytes{device_class="thin",node="node-a"} 200
topolvm_volumegroup_available_bytes{device_class="ssd",node="node-a"} 100
topolvm_volumegroup_available_bytes{device_class="thin",node="node-a"} 40
topolvm_volumegroup_size_bytes{device_class="ssd",node="node-a"} 1000
topolvm_volumegroup_size_bytes{device_class="thin",node="node-a"} 250
`},
		{name: "a removed class disappears", updates: [][]lvmd.Capacity{{thick, thin}, {thick}}, want: `
# HELP topolvm_volumegroup_available_bytes Free bytes of the device class's volume group (thick classes: less the spare; RAID: the largest RAID LV).
# TYPE topolvm_volumegroup_available_bytes gauge
topolvm_volumegroup_available_bytes{device_class="ssd",node="node-a"} 100
# HELP topolvm_volumegroup_size_bytes Size in bytes of the device class's volume group.
# TYPE topolvm_volumegroup_size_bytes gauge
topolvm_volumegroup_size_bytes{device_class="ssd",node="node-a"} 1000
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMetrics("node-a", nil)
			reg := prometheus.NewPedanticRegistry()
			if err := m.Register(reg); err != nil {
				t.Fatal(err)
			}
			for _, u := range tt.updates {
				m.Update(u)
			}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(tt.want), allMetrics...); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestMetricsFollowLVMD: Start feeds the collector from lvmd's Watch stream.
func TestMetricsFollowLVMD(t *testing.T) {
	svc, _ := newService(t)
	m := NewMetrics("node-a", svc)
	reg := prometheus.NewPedanticRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := m.Register(reg); err == nil {
		t.Error("registering twice succeeded")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- m.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	// Two of the three classes are ready; "missing" has no volume group and no series.
	eventually(t, "metrics of the two ready classes", func() bool {
		n, err := testutil.GatherAndCount(reg, MetricVolumeGroupAvailableBytes)
		return err == nil && n == 2
	})
	if got := testutil.ToFloat64(gaugeOf(t, reg, MetricVolumeGroupSizeBytes, "thin")); got != float64(10*gib) {
		t.Errorf("%s of the thin class = %v, want the VG's 10 GiB", MetricVolumeGroupSizeBytes, got)
	}
	if _, err := svc.CreateLV(
		t.Context(),
		lvmd.CreateLVRequest{Name: "lv", DeviceClass: "thin", Size: gib},
	); err != nil {
		t.Fatal(err)
	}
	eventually(t, "thin capacity after a create", func() bool {
		return testutil.ToFloat64(gaugeOf(t, reg, MetricThinPoolOverprovisionedAvailable, "thin")) == float64(7*gib)
	})
}

// gaugeOf is the value of one series as a collector testutil.ToFloat64 accepts.
func gaugeOf(t *testing.T, reg *prometheus.Registry, name, class string) prometheus.Gauge {
	t.Helper()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "device_class" && l.GetValue() == class {
					g.Set(s.GetGauge().GetValue())
				}
			}
		}
	}
	return g
}
