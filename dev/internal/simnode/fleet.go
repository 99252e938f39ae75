package simnode

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
)

// Options configure a Fleet.
type Options struct {
	// Namespace is the operator namespace (LVMVolumeGroups and node statuses live there).
	Namespace string
	// ClusterID tags the simulated volume groups, as the agent's --cluster-id.
	ClusterID string
	// Disks are every node's disks.
	Disks []Disk
	// RefreshInterval is lvmd's full state read period (0: the product's default).
	RefreshInterval time.Duration
	// Workers reconcile for all nodes (default 16).
	Workers int
	// EveryVolumeGroupUpdate queues every update of an LVMVolumeGroup for every node, as the node
	// agent did before vgmanager.VolumeGroupUpdateMatters filtered them (to measure the difference).
	EveryVolumeGroupUpdate bool
	// RegisterAtOnce writes a node's CSINode (the kubelet's record of the driver's registration)
	// when the node is added, as the agent registered before nodeagent.CapacityPublished held it
	// back; otherwise the CSINode follows the agent's wait (nodeagent.WaitToRegister).
	RegisterAtOnce bool
}

// key is one reconcile of one node.
type key struct {
	node string
	name string
}

// Fleet is the simulated nodes. Create it with New, add it to its manager's runnables (Start), and
// add nodes with AddNode.
type Fleet struct {
	o   Options
	mgr manager.Manager

	mu    sync.RWMutex
	nodes map[string]*node

	vgq workqueue.TypedRateLimitingInterface[key]
	lvq workqueue.TypedRateLimitingInterface[key]

	started chan struct{}
	// ctx is Start's: the simulated agents live as long as the fleet runs, not as long as the
	// call that added them.
	ctx context.Context //nolint:containedctx // see above

	// Counters: watch events the fleet received per resource, and what N real agents would have
	// received (each agent watches every LVMVolumeGroup of the namespace; LogicalVolumes by node).
	vgEvents, vgAgentEvents, lvEvents atomic.Int64
	vgReconciles, lvReconciles        atomic.Int64
	vgErrors, lvErrors                atomic.Int64
}

// New returns a Fleet on mgr's client and cache.
func New(mgr manager.Manager, o Options) (*Fleet, error) {
	if o.Namespace == "" || len(o.Disks) == 0 {
		return nil, errors.New("simnode: Namespace and Disks are required")
	}
	if o.Workers <= 0 {
		o.Workers = 16
	}
	// A failed reconcile is retried after the backoff of controller-runtime's default limiter, per
	// item (its overall bucket is per agent, so it is left out here).
	rl := func() workqueue.TypedRateLimiter[key] {
		return workqueue.NewTypedItemExponentialFailureRateLimiter[key](5*time.Millisecond, 1000*time.Second)
	}
	f := &Fleet{
		o: o, mgr: mgr, nodes: map[string]*node{}, started: make(chan struct{}),
		vgq: workqueue.NewTypedRateLimitingQueueWithConfig(rl(),
			workqueue.TypedRateLimitingQueueConfig[key]{Name: "simnode-vg"}),
		lvq: workqueue.NewTypedRateLimitingQueueWithConfig(rl(),
			workqueue.TypedRateLimitingQueueConfig[key]{Name: "simnode-lv"}),
	}
	return f, mgr.Add(f)
}

// Start registers the watch handlers and runs the workers until ctx ends (a manager Runnable).
func (f *Fleet) Start(ctx context.Context) error {
	vgInf, err := f.mgr.GetCache().GetInformer(ctx, &lvmv1alpha1.LVMVolumeGroup{})
	if err != nil {
		return fmt.Errorf("LVMVolumeGroup informer: %w", err)
	}
	if _, err := vgInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { f.volumeGroupEvent(nil, o) },
		UpdateFunc: func(old, o any) { f.volumeGroupEvent(old, o) },
		DeleteFunc: func(o any) { f.volumeGroupEvent(nil, o) },
	}); err != nil {
		return fmt.Errorf("LVMVolumeGroup handler: %w", err)
	}
	lvInf, err := f.mgr.GetCache().GetInformer(ctx, &topolvmv1.LogicalVolume{})
	if err != nil {
		return fmt.Errorf("LogicalVolume informer: %w", err)
	}
	if _, err := lvInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { f.logicalVolumeEvent(o) },
		UpdateFunc: func(_, o any) { f.logicalVolumeEvent(o) },
		DeleteFunc: func(o any) { f.logicalVolumeEvent(o) },
	}); err != nil {
		return fmt.Errorf("LogicalVolume handler: %w", err)
	}
	f.ctx = ctx
	close(f.started)
	var wg sync.WaitGroup
	for range f.o.Workers {
		wg.Go(func() { f.work(ctx, f.vgq, f.reconcileVG, &f.vgReconciles, &f.vgErrors) })
		wg.Go(func() { f.work(ctx, f.lvq, f.reconcileLV, &f.lvReconciles, &f.lvErrors) })
	}
	<-ctx.Done()
	f.vgq.ShutDown()
	f.lvq.ShutDown()
	wg.Wait()
	return nil
}

// volumeGroupEvent queues the LVMVolumeGroup for every node whose agent would reconcile it: each
// real agent watches every LVMVolumeGroup of the namespace and filters updates with
// vgmanager.VolumeGroupUpdateMatters. old is nil for a creation or deletion.
func (f *Fleet) volumeGroupEvent(old, o any) {
	obj, ok := objectOf(o)
	if !ok || obj.GetNamespace() != f.o.Namespace {
		return
	}
	f.vgEvents.Add(1)
	oldVG, _ := old.(*lvmv1alpha1.LVMVolumeGroup)
	newVG, _ := obj.(*lvmv1alpha1.LVMVolumeGroup)
	f.mu.RLock()
	defer f.mu.RUnlock()
	f.vgAgentEvents.Add(int64(len(f.nodes)))
	for name := range f.nodes {
		if oldVG != nil && newVG != nil && !f.o.EveryVolumeGroupUpdate &&
			!vgmanager.VolumeGroupUpdateMatters(name, oldVG, newVG) {
			continue
		}
		f.vgq.Add(key{node: name, name: obj.GetName()})
	}
}

// logicalVolumeEvent queues the LogicalVolume for its node, if that node is simulated.
func (f *Fleet) logicalVolumeEvent(o any) {
	obj, ok := objectOf(o)
	if !ok {
		return
	}
	lv, ok := obj.(*topolvmv1.LogicalVolume)
	if !ok {
		return
	}
	f.lvEvents.Add(1)
	f.mu.RLock()
	_, ours := f.nodes[lv.Spec.NodeName]
	f.mu.RUnlock()
	if ours {
		f.lvq.Add(key{node: lv.Spec.NodeName, name: lv.Name})
	}
}

func objectOf(o any) (client.Object, bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	obj, ok := o.(client.Object)
	return obj, ok
}

// work runs reconciles from q until it shuts down.
func (f *Fleet) work(
	ctx context.Context,
	q workqueue.TypedRateLimitingInterface[key],
	fn func(context.Context, *node, string) (reconcile.Result, error),
	count, errs *atomic.Int64,
) {
	for {
		k, shutdown := q.Get()
		if shutdown {
			return
		}
		f.mu.RLock()
		n := f.nodes[k.node]
		f.mu.RUnlock()
		if n == nil {
			q.Forget(k)
			q.Done(k)
			continue
		}
		count.Add(1)
		res, err := fn(ctx, n, k.name)
		switch {
		case err != nil:
			errs.Add(1)
			q.AddRateLimited(k)
		case res.RequeueAfter > 0:
			q.Forget(k)
			q.AddAfter(k, res.RequeueAfter)
		default:
			q.Forget(k)
		}
		q.Done(k)
	}
}

func (f *Fleet) reconcileVG(ctx context.Context, n *node, name string) (reconcile.Result, error) {
	n.vgMu.Lock()
	defer n.vgMu.Unlock()
	ctx = ctrl.LoggerInto(ctx, ctrl.Log.WithName("simnode").WithValues("node", n.name, "LVMVolumeGroup", name))
	return n.vgm.Reconcile(
		ctx,
		reconcile.Request{NamespacedName: client.ObjectKey{Namespace: f.o.Namespace, Name: name}},
	)
}

func (f *Fleet) reconcileLV(ctx context.Context, n *node, name string) (reconcile.Result, error) {
	ctx = ctrl.LoggerInto(ctx, ctrl.Log.WithName("simnode").WithValues("node", n.name, "LogicalVolume", name))
	return n.lvr.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
}

// Counters are the fleet's counts so far.
type Counters struct {
	Nodes int
	// VolumeGroupEvents is the LVMVolumeGroup watch events the fleet received; AgentVolumeGroupEvents
	// is what the nodes' real agents would have received together (each watches them all).
	VolumeGroupEvents, AgentVolumeGroupEvents    int64
	LogicalVolumeEvents                          int64
	VolumeGroupReconciles, VolumeGroupErrors     int64
	LogicalVolumeReconciles, LogicalVolumeErrors int64
}

// Counters returns the counts so far.
func (f *Fleet) Counters() Counters {
	f.mu.RLock()
	n := len(f.nodes)
	f.mu.RUnlock()
	return Counters{
		Nodes: n, VolumeGroupEvents: f.vgEvents.Load(), AgentVolumeGroupEvents: f.vgAgentEvents.Load(),
		LogicalVolumeEvents: f.lvEvents.Load(), VolumeGroupReconciles: f.vgReconciles.Load(),
		VolumeGroupErrors: f.vgErrors.Load(), LogicalVolumeReconciles: f.lvReconciles.Load(),
		LogicalVolumeErrors: f.lvErrors.Load(),
	}
}
