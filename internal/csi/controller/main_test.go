package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// The suite: one apiserver, one Controller service on a cache, and a goroutine playing the nodes.
var (
	k8s       client.Client
	srv       *Server
	frozen    *clocktesting.FakeClock // the service's clock; never advanced
	reads     *countingCache          // the service's cache, counting reads
	nodeAgent *fakeNode
	restCfg   *rest.Config // the suite apiserver's, for tests that start their own manager
)

// Nodes of the suite and how the fake node agent treats their LogicalVolumes.
const (
	nodeA      = "node-a"      // creates, resizes and deletes at once
	nodeB      = "node-b"      // likewise
	nodeFull   = "node-full"   // answers every create with ResourceExhausted
	nodeManual = "node-manual" // does nothing; tests write the status themselves
	nodeLVMD   = "node-lvmd"   // left to the real LogicalVolume reconciler and lvmd of TestReasonWalk
	// nodeLVMDThick is TestThickSnapshotsAndClones's node of the same kind. A node of its own: its
	// fresh lvmd would otherwise also reconcile what TestReasonWalk left on node-lvmd (see there).
	nodeLVMDThick = "node-lvmd-thick"
)

const finalizer = "topolvm.io/test-node"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "csi/controller: KUBEBUILDER_ASSETS is not set; run `make test-unit`, or "+
			"KUBEBUILDER_ASSETS=$(bash hack/kube-assets.sh | tail -1) go test ./internal/csi/controller/")
		return 1
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "csi/controller: start apiserver: %v\n", err)
		_ = env.Stop() // a failed CRD install leaves etcd and the apiserver running otherwise
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "csi/controller: stop apiserver: %v\n", err)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := setUp(ctx, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "csi/controller: %v\n", err)
		return 1
	}
	return m.Run()
}

func setUp(ctx context.Context, cfg *rest.Config) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := topolvmv1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := lvmv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	var err error
	restCfg = cfg
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	for name, annotations := range map[string]map[string]string{
		nodeA:         {driver.CapacityAnnotation(""): gib(10), driver.CapacityAnnotation("ssd"): gib(5)},
		nodeB:         {driver.CapacityAnnotation(""): gib(20), driver.CapacityAnnotation("ssd"): "garbage"},
		nodeFull:      {driver.CapacityAnnotation(""): "0"},
		nodeManual:    {},
		nodeLVMD:      {}, // publishes no capacity, so only requests that name it reach it
		nodeLVMDThick: {},
	} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
		if err := k8s.Create(ctx, n); err != nil {
			return fmt.Errorf("create node %s: %w", name, err)
		}
	}

	svcCache, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	reads = &countingCache{Cache: svcCache}
	frozen = clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if srv, err = New(ctx, Options{Client: k8s, Cache: reads, Clock: frozen}); err != nil {
		return fmt.Errorf("new controller: %w", err)
	}
	go func() { _ = svcCache.Start(ctx) }()
	if !svcCache.WaitForCacheSync(ctx) {
		return fmt.Errorf("service cache did not sync")
	}
	nodeAgent, err = startFakeNode(ctx, cfg, scheme)
	return err
}

func gib(n int64) string { return fmt.Sprint(n * lvmcsi.GiB) }

// countingCache counts the reads of the service, to prove it reads only when woken by an event.
type countingCache struct {
	cache.Cache
	n atomic.Int64
}

func (c *countingCache) Get(
	ctx context.Context,
	key client.ObjectKey,
	obj client.Object,
	opts ...client.GetOption,
) error {
	c.n.Add(1)
	return c.Cache.Get(ctx, key, obj, opts...)
}

func (c *countingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.n.Add(1)
	return c.Cache.List(ctx, list, opts...)
}

// fakeNode plays the node agents: it reacts to LogicalVolume events from its own informer.
type fakeNode struct {
	ctx    context.Context //nolint:containedctx // lifetime of the suite's background goroutine
	queue  chan string
	mu     sync.Mutex
	seen   map[string]chan *topolvmv1.LogicalVolume
	reader client.Reader
}

func startFakeNode(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) (*fakeNode, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	f := &fakeNode{
		ctx:    ctx,
		queue:  make(chan string, 1000),
		seen:   map[string]chan *topolvmv1.LogicalVolume{},
		reader: c,
	}
	inf, err := c.GetInformer(ctx, &topolvmv1.LogicalVolume{})
	if err != nil {
		return nil, err
	}
	enqueue := func(obj any) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if o, ok := obj.(client.Object); ok {
			f.queue <- o.GetName()
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue,
	}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("fake node cache did not sync")
	}
	go f.loop()
	return f, nil
}

// expect returns a channel that receives the LogicalVolume name once the fake node sees it.
func (f *fakeNode) expect(name string) <-chan *topolvmv1.LogicalVolume {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan *topolvmv1.LogicalVolume, 1)
	f.seen[name] = ch
	return ch
}

func (f *fakeNode) loop() {
	for {
		select {
		case <-f.ctx.Done():
			return
		case name := <-f.queue:
			lv := &topolvmv1.LogicalVolume{}
			if err := f.reader.Get(f.ctx, client.ObjectKey{Name: name}, lv); err != nil {
				continue
			}
			f.mu.Lock()
			if ch, ok := f.seen[name]; ok {
				ch <- lv.DeepCopy()
				delete(f.seen, name)
			}
			f.mu.Unlock()
			if err := f.reconcile(lv); err != nil {
				fmt.Fprintf(os.Stderr, "fake node: %s: %v\n", name, err)
			}
		}
	}
}

// reconcile does what a node agent does: finalizer, create, resize, delete.
func (f *fakeNode) reconcile(lv *topolvmv1.LogicalVolume) error {
	ctx := f.ctx
	node := lv.Spec.NodeName
	switch {
	case node == nodeManual || node == nodeLVMD || node == nodeLVMDThick:
		return nil
	case lv.DeletionTimestamp != nil:
		orig := lv.DeepCopy()
		lv.Finalizers = nil
		return client.IgnoreNotFound(k8s.Patch(ctx, lv, client.MergeFrom(orig)))
	case len(lv.Finalizers) == 0:
		orig := lv.DeepCopy()
		lv.Finalizers = []string{finalizer}
		return k8s.Patch(ctx, lv, client.MergeFrom(orig))
	case node == nodeFull && lv.Status.Code == 0:
		orig := lv.DeepCopy()
		lv.Status.Code = 8 // codes.ResourceExhausted
		lv.Status.Message = "not enough space in volume group"
		return k8s.Status().Patch(ctx, lv, client.MergeFrom(orig))
	case node == nodeFull:
		return nil
	case lv.Status.VolumeID == "" || lv.Status.CurrentSize.Cmp(lv.Spec.Size) < 0:
		orig := lv.DeepCopy()
		if lv.Status.VolumeID == "" {
			lv.Status.VolumeID = "lv-" + string(lv.UID)
		}
		lv.Status.CurrentSize = extents(lv.Spec.Size)
		return k8s.Status().Patch(ctx, lv, client.MergeFrom(orig))
	}
	return nil
}

// extents rounds a size up to 4 MiB extents, as lvm2 does.
func extents(q resource.Quantity) *resource.Quantity {
	const extent = 4 * lvmcsi.MiB
	return resource.NewQuantity((q.Value()+extent-1)/extent*extent, resource.BinarySI)
}
