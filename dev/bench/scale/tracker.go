package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// tracker records, from watches of the admin user (not counted as our components' requests),
// when each node first had a CSIStorageCapacity above zero per StorageClass, when the LVMCluster
// status first listed each node Ready per device class, and when each claim was Bound.
type tracker struct {
	mu         sync.Mutex
	capacity   map[string]map[string]time.Time // node → StorageClass → first seen with capacity
	ready      map[string]map[string]time.Time // node → device class → first seen Ready
	bound      map[string]time.Time            // namespace/name → first seen Bound
	statusSize int                             // largest LVMCluster status seen, JSON bytes
	state      lvmv1alpha1.LVMStateType
}

func newTracker() *tracker {
	return &tracker{capacity: map[string]map[string]time.Time{}, ready: map[string]map[string]time.Time{},
		bound: map[string]time.Time{}}
}

// start runs the watches on a cache of its own until ctx ends.
func (t *tracker) start(ctx context.Context, b *bench) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", b.o.stateDir+"/kubeconfig")
	if err != nil {
		return fmt.Errorf("admin kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	c, err := cache.New(cfg, cache.Options{Scheme: b.scheme, DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return fmt.Errorf("tracker cache: %w", err)
	}
	handlers := []struct {
		obj client.Object
		fn  func(any)
	}{
		{&storagev1.CSIStorageCapacity{}, t.onCapacity},
		{&lvmv1alpha1.LVMCluster{}, t.onCluster},
		{&corev1.PersistentVolumeClaim{}, t.onClaim},
	}
	for _, h := range handlers {
		inf, err := c.GetInformer(ctx, h.obj)
		if err != nil {
			return fmt.Errorf("tracker informer: %w", err)
		}
		fn := h.fn
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: fn, UpdateFunc: func(_, o any) { fn(o) },
		}); err != nil {
			return fmt.Errorf("tracker handler: %w", err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("tracker cache did not sync")
	}
	return nil
}

func (t *tracker) onCapacity(o any) {
	c, ok := o.(*storagev1.CSIStorageCapacity)
	if !ok || c.NodeTopology == nil || c.Capacity == nil || c.Capacity.Sign() <= 0 {
		return
	}
	node := c.NodeTopology.MatchLabels[driver.TopologyNodeKey]
	if node == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	firstSeen(t.capacity, node, c.StorageClassName)
}

func (t *tracker) onCluster(o any) {
	lc, ok := o.(*lvmv1alpha1.LVMCluster)
	if !ok {
		return
	}
	raw, _ := json.Marshal(lc.Status)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.statusSize = max(t.statusSize, len(raw))
	t.state = lc.Status.State
	for _, dcs := range lc.Status.DeviceClassStatuses {
		for _, ns := range dcs.NodeStatus {
			if ns.Status == lvmv1alpha1.VGStatusReady {
				firstSeen(t.ready, ns.Node, dcs.Name)
			}
		}
	}
}

func (t *tracker) onClaim(o any) {
	pvc, ok := o.(*corev1.PersistentVolumeClaim)
	if !ok || pvc.Status.Phase != corev1.ClaimBound {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := pvc.Namespace + "/" + pvc.Name
	if _, seen := t.bound[k]; !seen {
		t.bound[k] = time.Now()
	}
}

func firstSeen(m map[string]map[string]time.Time, a, b string) {
	inner := m[a]
	if inner == nil {
		inner = map[string]time.Time{}
		m[a] = inner
	}
	if _, seen := inner[b]; !seen {
		inner[b] = time.Now()
	}
}

// allSeen returns the latest first-seen time over every node and key of m, and whether all of
// them were seen.
func (t *tracker) allSeen(m map[string]map[string]time.Time, nodes, keys []string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var latest time.Time
	for _, n := range nodes {
		for _, k := range keys {
			at, ok := m[n][k]
			if !ok {
				return latest, false
			}
			if at.After(latest) {
				latest = at
			}
		}
	}
	return latest, true
}

// boundAt returns when each of names (namespace/name) was Bound, and whether all were.
func (t *tracker) boundAt(names []string) ([]time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]time.Time, 0, len(names))
	for _, n := range names {
		at, ok := t.bound[n]
		if !ok {
			return nil, false
		}
		out = append(out, at)
	}
	return out, true
}
