package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/controller/logicalvolume"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// MetricOrphanLogicalVolumes counts the orphan LVs of a device class.
const MetricOrphanLogicalVolumes = "lvms_orphan_logical_volumes"

// EventOrphanLogicalVolume is the reason of the Warning event on the Node for each orphan LV.
const EventOrphanLogicalVolume = "OrphanLogicalVolume"

// DefaultOrphanInterval is how often OrphanReporter compares the LVs with the LogicalVolumes.
const DefaultOrphanInterval = 5 * time.Minute

// copySuffixes are lvmd's name suffixes of the LVs a restore or clone by copy works with before the
// copy takes its volume's name: the LV it fills, and the snapshot a clone reads its source from.
var copySuffixes = map[string]string{lvmd.RestoringSuffix: "restore", lvmd.ImageSuffix: "clone"}

// LVLister lists the device classes and the LVs lvmd made in each; *lvmd.Service implements it.
type LVLister interface {
	Capacities(ctx context.Context) ([]lvmd.Capacity, error)
	ListLVs(ctx context.Context, class string) ([]lvmd.LV, error)
}

// OrphanReporterOptions configure an OrphanReporter.
type OrphanReporterOptions struct {
	// Client lists LogicalVolumes (the manager's cache); required.
	Client client.Reader
	// Recorder emits the events on the Node; required.
	Recorder events.EventRecorder
	// LVs is lvmd; required.
	LVs LVLister
	// NodeName is this node; required.
	NodeName string
	// Interval between scans (default DefaultOrphanInterval).
	Interval time.Duration
}

// OrphanReporter finds orphan LVs: LVs lvmd made (tagged lvms, in a device class of this node) that no
// LogicalVolume of this node names, and leftovers of an interrupted restore (<name>-restoring whose
// volume is gone or complete). It never removes one: an orphan may be the only copy of someone's data
// (a LogicalVolume deleted by hand, a backup restored elsewhere). It reports each as a Warning event on
// the Node, once, and counts them in lvms_orphan_logical_volumes{device_class}. An LV counts as an
// orphan only when two scans in a row find it so, which rules out an LV met between its removal and
// the LogicalVolume's deletion. It is a manager Runnable and a prometheus.Collector.
type OrphanReporter struct {
	o    OrphanReporterOptions
	desc *prometheus.Desc

	mu       sync.Mutex
	seen     map[string]bool // candidates of the previous scan, "class/name"
	reported map[string]bool // orphans already announced
	counts   map[string]int  // per device class
}

var _ prometheus.Collector = (*OrphanReporter)(nil)

// NewOrphanReporter returns an OrphanReporter.
func NewOrphanReporter(o OrphanReporterOptions) (*OrphanReporter, error) {
	if o.Client == nil || o.Recorder == nil || o.LVs == nil || o.NodeName == "" {
		return nil, errors.New("orphan reporter: Client, Recorder, LVs and NodeName are required")
	}
	if o.Interval <= 0 {
		o.Interval = DefaultOrphanInterval
	}
	return &OrphanReporter{
		o: o,
		desc: prometheus.NewDesc(MetricOrphanLogicalVolumes,
			"LVs made by lvms in the device class that no LogicalVolume names (never removed automatically).",
			[]string{"device_class"}, prometheus.Labels{"node": o.NodeName}),
		seen: map[string]bool{}, reported: map[string]bool{}, counts: map[string]int{},
	}, nil
}

// NeedLeaderElection is false: every node agent looks at its own node.
func (r *OrphanReporter) NeedLeaderElection() bool { return false }

// Start scans every Interval until ctx ends. A failed scan is logged and retried at the next tick.
func (r *OrphanReporter) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("orphans")
	tick := time.NewTicker(r.o.Interval)
	defer tick.Stop()
	for {
		if err := r.Scan(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Looking for orphan LVs failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Scan compares the LVs with the LogicalVolumes once, updates the metric and reports new orphans.
func (r *OrphanReporter) Scan(ctx context.Context) error {
	classes, candidates, err := r.candidates(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := map[string]int{}
	for _, c := range classes {
		counts[c] = 0
	}
	var fresh []orphan
	for key, o := range candidates {
		if !r.seen[key] {
			continue
		}
		counts[o.class]++
		if !r.reported[key] {
			fresh = append(fresh, o)
			r.reported[key] = true
		}
	}
	r.seen = map[string]bool{}
	for key := range candidates {
		r.seen[key] = true
	}
	for key := range r.reported {
		if _, ok := candidates[key]; !ok {
			delete(r.reported, key) // gone: a later orphan of that name is news again
		}
	}
	r.counts = counts
	slices.SortFunc(fresh, func(a, b orphan) int { return strings.Compare(a.key(), b.key()) })
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: r.o.NodeName}}
	for _, o := range fresh {
		r.o.Recorder.Eventf(node, nil, corev1.EventTypeWarning, EventOrphanLogicalVolume, "Detect",
			"LV %s/%s (%d bytes, device class %s) was made by lvms but no LogicalVolume names it%s; it is kept. "+
				"Once you know nobody needs its data, remove it on node %s: %s",
			o.lv.VolumeGroup, o.lv.Name, o.lv.Size, o.class, o.why, r.o.NodeName, removeAdvice(o.lv))
	}
	return nil
}

// removeAdvice is how to remove an orphan LV without handing its data to the next volume: a thick
// LV's extents go back to the volume group as they are, so it is zeroed first, as lvmd does before
// it removes one (a copy-on-write snapshot through its COW device, which is its extents); a thin
// pool zeroes every chunk it hands out, so a thin LV is just removed.
func removeAdvice(lv lvmd.LV) string {
	name := lv.VolumeGroup + "/" + lv.Name
	switch {
	case lv.ThinPool != "":
		return "`lvremove " + name + "`"
	case lv.Origin != "":
		cow := "/dev/mapper/" + strings.ReplaceAll(lv.VolumeGroup, "-", "--") + "-" +
			strings.ReplaceAll(lv.Name, "-", "--") + "-cow"
		return "`blkdiscard --force --zeroout " + cow + "` then `lvremove " + name +
			"` (zero it first: its extents go to the next volume as they are)"
	default:
		return "`lvchange -ay " + name + "`, `blkdiscard --zeroout " + lv.Path + "` then `lvremove " + name +
			"` (zero it first: its extents go to the next volume as they are)"
	}
}

type orphan struct {
	class string
	lv    lvmd.LV
	why   string
}

func (o orphan) key() string { return o.class + "/" + o.lv.Name }

// candidates returns the device classes and the LVs no LogicalVolume of this node accounts for, by
// key.
func (r *OrphanReporter) candidates(ctx context.Context) ([]string, map[string]orphan, error) {
	// LVs first: an LV created after this read has its LogicalVolume already.
	caps, err := r.o.LVs.Capacities(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("orphan LVs: device classes: %w", err)
	}
	var classes []string
	lvs := map[string][]lvmd.LV{}
	for _, c := range caps {
		classes = append(classes, c.DeviceClass)
		if lvs[c.DeviceClass], err = r.o.LVs.ListLVs(ctx, c.DeviceClass); err != nil {
			return nil, nil, fmt.Errorf("orphan LVs: list LVs of %s: %w", c.DeviceClass, err)
		}
	}
	list := &topolvmv1.LogicalVolumeList{}
	if err := r.o.Client.List(ctx, list); err != nil {
		return nil, nil, fmt.Errorf("orphan LVs: list LogicalVolumes: %w", err)
	}
	named := map[string]bool{}
	for i := range list.Items {
		if lv := &list.Items[i]; lv.Spec.NodeName == r.o.NodeName {
			named[logicalvolume.LVName(lv)] = true
		}
	}
	out := map[string]orphan{}
	for class, items := range lvs {
		names := map[string]bool{}
		for _, lv := range items {
			names[lv.Name] = true
		}
		for _, lv := range items {
			o := orphan{class: class, lv: lv}
			base, what := copyOf(lv.Name)
			switch {
			case base != "" && named[base] && !names[base]:
				continue // a restore or clone by copy in progress
			case base != "":
				o.why = " (the leftover of an interrupted " + what + " of " + base + ")"
			case named[lv.Name]:
				continue
			}
			out[o.key()] = o
		}
	}
	return classes, out, nil
}

// copyOf returns the volume an LV of a restore or clone by copy works for, and which it is; "" for
// another LV.
func copyOf(name string) (base, what string) {
	for suffix, w := range copySuffixes {
		if b, ok := strings.CutSuffix(name, suffix); ok {
			return b, w
		}
	}
	return "", ""
}

// Describe implements prometheus.Collector.
func (r *OrphanReporter) Describe(ch chan<- *prometheus.Desc) { ch <- r.desc }

// Collect implements prometheus.Collector.
func (r *OrphanReporter) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for class, n := range r.counts {
		ch <- prometheus.MustNewConstMetric(r.desc, prometheus.GaugeValue, float64(n), class)
	}
}
