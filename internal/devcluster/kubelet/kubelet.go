package kubelet

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Defaults of Config.
const (
	DefaultRootDir   = "/var/lib/kubelet"
	DefaultStateDir  = "/var/lib/lvms-dev-kubelet"
	DefaultHeartbeat = 10 * time.Second
	// LogTailAnnotation holds the last lines of the pod's output (there is no kubectl logs).
	LogTailAnnotation = "dev.lvms.io/log-tail"
	// FieldManager is the field owner of every write.
	FieldManager = "lvms-dev-kubelet"
)

// Config is the static configuration of a Kubelet.
type Config struct {
	// NodeName is the Node object's name (required).
	NodeName string
	// RootDir is the kubelet root directory under which publish targets are created (DefaultRootDir).
	RootDir string
	// StateDir holds pods/<namespace>_<name>.log (DefaultStateDir).
	StateDir string
	// Heartbeat is the interval of node status updates and Lease renewals (DefaultHeartbeat).
	Heartbeat time.Duration
	// Capacity is the node's capacity and allocatable (default: 4 cpu, 8Gi memory, 110 pods).
	Capacity corev1.ResourceList
	// Labels are added to the Node's labels.
	Labels map[string]string
	// LogTailLines is how many lines of output the log-tail annotation keeps (default 20).
	LogTailLines int
}

// Deps are the Kubelet's collaborators.
type Deps struct {
	Client kubernetes.Interface
	// CSI is the node service of the driver (a client on its unix socket).
	CSI csi.NodeClient
	// Runner starts pod processes.
	Runner Runner
	// Clock defaults to the real clock.
	Clock clock.WithTicker
}

// Kubelet is the dev-cluster kubelet stand-in. Run drives it.
type Kubelet struct {
	cfg     Config
	client  kubernetes.Interface
	csi     csi.NodeClient
	runner  Runner
	clock   clock.WithTicker
	volumes *volumeManager

	mu      sync.Mutex
	workers map[types.UID]*podWorker
	// finished holds the pods torn down whose Delete event has not arrived yet.
	finished map[types.UID]bool
	// expanding holds the claims (namespace/name) whose node expansion is running.
	expanding map[string]bool
}

// New returns a Kubelet; cfg gets its defaults.
func New(cfg Config, d Deps) *Kubelet {
	if cfg.RootDir == "" {
		cfg.RootDir = DefaultRootDir
	}
	if cfg.StateDir == "" {
		cfg.StateDir = DefaultStateDir
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Capacity == nil {
		cfg.Capacity = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
	}
	if cfg.LogTailLines <= 0 {
		cfg.LogTailLines = 20
	}
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	k := &Kubelet{
		cfg: cfg, client: d.Client, csi: d.CSI, runner: d.Runner, clock: d.Clock,
		workers: map[types.UID]*podWorker{}, finished: map[types.UID]bool{}, expanding: map[string]bool{},
	}
	k.volumes = &volumeManager{client: d.Client, csi: d.CSI, rootDir: cfg.RootDir, published: map[types.UID][]podVolume{}}
	return k
}

// Run registers the node, keeps it Ready, writes the CSINode and runs the pods bound to the node until
// ctx ends. Stopping kills the pod processes but leaves their volumes and objects alone.
func (k *Kubelet) Run(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithValues("node", k.cfg.NodeName)
	ctx = ctrl.LoggerInto(ctx, log)
	if err := retryUntil(ctx, k.clock, func() error { return k.RegisterNode(ctx) }); err != nil {
		return fmt.Errorf("register node %s: %w", k.cfg.NodeName, err)
	}
	log.Info("Node registered")
	var wg sync.WaitGroup
	wg.Go(func() { k.heartbeatLoop(ctx) })
	wg.Go(func() {
		if err := retryUntil(ctx, k.clock, func() error { return k.WriteCSINode(ctx) }); err == nil {
			log.Info("CSINode written")
		}
	})
	err := k.watch(ctx)
	wg.Wait()
	k.waitWorkers()
	return err
}

// logPath is the output file of a pod. The UID is part of it: a pod made again under the same
// name must not show the output of its predecessor.
func (k *Kubelet) logPath(pod *corev1.Pod) string {
	return filepath.Join(k.cfg.StateDir, "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID)+".log")
}

// retryUntil calls fn until it succeeds or ctx ends, backing off from 200 ms to 5 s. It returns the last
// error wrapped with the context's error when ctx ends first.
func retryUntil(ctx context.Context, clk clock.Clock, fn func() error) error {
	delay := 200 * time.Millisecond
	for {
		err := fn()
		if err == nil {
			return nil
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Retrying", "error", err.Error(), "after", delay)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-clk.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// slicesSortedKeys returns the keys of m in order.
func slicesSortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
