package simnode

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/lvm-operator/lvm-operator/internal/controller/logicalvolume"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
	"github.com/lvm-operator/lvm-operator/internal/devices"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvm/lvmtest"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
	"github.com/lvm-operator/lvm-operator/internal/nodeagent"
)

// node is one simulated node: the product's node-agent parts on its own in-memory lvm2.
type node struct {
	name  string
	fake  *lvmtest.LVM
	svc   *lvmd.Service
	vgm   *vgmanager.Reconciler
	lvr   *logicalvolume.Reconciler
	cap   *nodeagent.CapacityAnnotator
	vgMu  sync.Mutex // one volume-group reconcile at a time, as the real agent's controller
	stop  context.CancelFunc
	ready chan struct{} // closed once the node's runnables started
}

// simDisks is a node's block devices, blank disks of fixed sizes, evaluated by the product's
// device filter as the real inventory's would be. A device lvm2 uses as a PV shows the
// LVM2_member signature, as blkid would report it.
type simDisks struct {
	mu   sync.Mutex
	devs []devices.Candidate
}

func (d *simDisks) Plan(_ context.Context, p devices.Policy) ([]devices.Verdict, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]devices.Verdict, 0, len(d.devs))
	for _, c := range d.devs {
		if _, isPV := p.PVs[c.Device.Name]; isPV && !slices.Contains(c.Facts.Signatures, "LVM2_member") {
			c.Facts.Signatures = append(slices.Clone(c.Facts.Signatures), "LVM2_member")
		}
		out = append(out, devices.Evaluate(c, p))
	}
	return out, nil
}

func (d *simDisks) Wipe(context.Context, string, devices.WipeOptIn) error { return nil }

// newNode builds node name's parts on f's shared client and cache; nothing runs yet.
func (f *Fleet) newNode(name string) (*node, error) {
	fake := lvmtest.New()
	disks := &simDisks{}
	for _, d := range f.o.Disks {
		fake.AddDevice(d.Path, uint64(d.Size.Value()))
		disks.devs = append(disks.devs, devices.Candidate{
			Device: devices.BlockDevice{Name: d.Path, KName: d.Path, Type: "disk", Size: uint64(d.Size.Value())},
		})
	}
	classes, err := lvmd.NewDeviceClassManager(nil)
	if err != nil {
		return nil, fmt.Errorf("node %s: device classes: %w", name, err)
	}
	svc, err := lvmd.NewService(lvmd.Options{
		Executor: fake, Classes: classes, RefreshInterval: f.o.RefreshInterval,
		Identity: lvm.Identity{Node: name, Cluster: f.o.ClusterID},
	})
	if err != nil {
		return nil, fmt.Errorf("node %s: lvmd: %w", name, err)
	}
	c := f.mgr.GetClient()
	vgm := vgmanager.New(vgmanager.Options{
		Client: c, APIReader: f.mgr.GetAPIReader(), Recorder: f.mgr.GetEventRecorder("lvms-node"), Disks: disks,
		LVM:  lvm.New(fake),
		Sink: classes, StateChanged: svc.MarkStale, NodeName: name, ClusterID: f.o.ClusterID,
		Namespace: f.o.Namespace, ResolvePath: func(p string) (string, error) { return p, nil },
	})
	lvr, err := logicalvolume.New(logicalvolume.Options{
		Client: c, APIReader: f.mgr.GetAPIReader(), NodeName: name, LVM: svc,
		StatDevice: func(string) error { return nil },
	})
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	annotator, err := nodeagent.NewCapacityAnnotator(nodeagent.CapacityAnnotatorOptions{
		Client: c, Reader: f.mgr.GetAPIReader(), NodeName: name, Capacities: svc,
	})
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	return &node{name: name, fake: fake, svc: svc, vgm: vgm, lvr: lvr, cap: annotator,
		ready: make(chan struct{})}, nil
}

// run starts the node's long-running parts, as the agent's manager would: lvmd's periodic state
// reads, the capacity annotator and the first lvmd feed.
func (n *node) run(ctx context.Context) {
	ctx, n.stop = context.WithCancel(ctx)
	log := ctrl.Log.WithName("simnode").WithValues("node", n.name)
	ctx = ctrl.LoggerInto(ctx, log)
	for _, r := range []func(context.Context) error{n.svc.Run, n.cap.Start, n.vgm.FeedLVMDAtStart} {
		go func() {
			if err := r(ctx); err != nil && ctx.Err() == nil {
				log.Error(err, "A node-agent part stopped")
			}
		}()
	}
	close(n.ready)
}

// Disk is a simulated disk of every node.
type Disk struct {
	Path string
	Size resource.Quantity
}
