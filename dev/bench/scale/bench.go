package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/dev/internal/simnode"
)

// info describes the run for the results.
type info struct {
	Started         time.Time `json:"started"`
	Commit          string    `json:"commit"`
	ProvisionerArgs []string  `json:"provisionerArgs"`
	Claims          int       `json:"claimsPerStep"`
	Disks           string    `json:"disks"`
	SimWorkers      int       `json:"simWorkers"`
	// EveryVolumeGroupUpdate: the simulated agents did not filter LVMVolumeGroup updates.
	EveryVolumeGroupUpdate bool `json:"everyVolumeGroupUpdate"`
	// RegisterAtOnce: the simulated agents registered when added, not once their capacity was
	// published.
	RegisterAtOnce bool `json:"registerAtOnce"`
}

// bench is one benchmark run: the components it started and its clients.
type bench struct {
	o    options
	info info
	logs string

	admin  client.Client
	scheme *runtime.Scheme
	mgr    manager.Manager
	fleet  *simnode.Fleet
	stopFn context.CancelFunc

	kwok, operator, provisioner *process
	provisionerArgs             []string
	sampler                     *sampler
	audit                       *auditReader
	tracker                     *tracker
	nodes                       int
	names                       []string
}

func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	return s, errors.Join(clientgoscheme.AddToScheme(s), lvmv1alpha1.AddToScheme(s), topolvmv1.AddToScheme(s))
}

// newBench starts the components on the running dev cluster and applies the LVMCluster.
func newBench(ctx context.Context, o options) (b *bench, err error) {
	ctrl.SetLogger(zap.New(zap.WriteTo(mustCreate(filepath.Join(o.results, "sim.log")))))
	b = &bench{o: o, logs: filepath.Join(o.results, "logs"), audit: &auditReader{path: o.auditLog}}
	b.info = info{
		Started:                time.Now().UTC(),
		Commit:                 gitCommit(),
		Claims:                 o.claims,
		Disks:                  "/dev/ubda, /dev/ubdb of " + o.diskSize + " each",
		SimWorkers:             o.simWorkers,
		EveryVolumeGroupUpdate: o.unfiltered,
		RegisterAtOnce:         o.atOnce,
	}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	if err := os.MkdirAll(b.logs, 0o755); err != nil {
		return b, fmt.Errorf("logs dir: %w", err)
	}
	if b.scheme, err = newScheme(); err != nil {
		return b, fmt.Errorf("scheme: %w", err)
	}
	adminCfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(o.stateDir, "kubeconfig"))
	if err != nil {
		return b, fmt.Errorf("admin kubeconfig: %w", err)
	}
	adminCfg.QPS, adminCfg.Burst = 200, 400
	if b.admin, err = client.New(adminCfg, client.Options{Scheme: b.scheme}); err != nil {
		return b, fmt.Errorf("admin client: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.namespace}}
	if err := b.admin.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return b, fmt.Errorf("create namespace %s: %w", o.namespace, err)
	}
	var kubeSystem corev1.Namespace
	if err := b.admin.Get(ctx, client.ObjectKey{Name: "kube-system"}, &kubeSystem); err != nil {
		return b, fmt.Errorf("kube-system: %w", err)
	}
	if err := b.startComponents(ctx); err != nil {
		return b, err
	}
	b.info.ProvisionerArgs = b.provisionerArgs
	b.sampler = newSampler(b.operator.cmd.Process.Pid)
	go b.sampler.run(ctx)
	if err := b.startFleet(ctx, string(kubeSystem.UID)); err != nil {
		return b, err
	}
	return b, b.applyLVMCluster(ctx)
}

// startFleet runs the simulated agents on their own user's client: rate limits raised, as each
// real agent has its own.
func (b *bench) startFleet(ctx context.Context, clusterID string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(b.o.stateDir, "kubeconfig-"+userSim))
	if err != nil {
		return fmt.Errorf("simulated agents' kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 5000, 10000
	cfg.UserAgent = "lvms-node-sim"
	inNS := cache.ByObject{Namespaces: map[string]cache.Config{b.o.namespace: {}}}
	b.mgr, err = ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  b.scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: cache.Options{
			ByObject: map[client.Object]cache.ByObject{
				&lvmv1alpha1.LVMVolumeGroup{}: inNS, &lvmv1alpha1.LVMCluster{}: inNS,
				&lvmv1alpha1.LVMVolumeGroupNodeStatus{}: inNS,
			},
			DefaultTransform: cache.TransformStripManagedFields(),
		},
	})
	if err != nil {
		return fmt.Errorf("simulated agents' manager: %w", err)
	}
	size, err := resource.ParseQuantity(b.o.diskSize)
	if err != nil {
		return fmt.Errorf("--disk-size: %w", err)
	}
	b.fleet, err = simnode.New(b.mgr, simnode.Options{
		Namespace: b.o.namespace, ClusterID: clusterID, Workers: b.o.simWorkers, EveryVolumeGroupUpdate: b.o.unfiltered,
		RegisterAtOnce: b.o.atOnce,
		Disks:          []simnode.Disk{{Path: "/dev/ubda", Size: size}, {Path: "/dev/ubdb", Size: size}},
	})
	if err != nil {
		return err
	}
	mctx, cancel := context.WithCancel(ctx)
	b.stopFn = cancel
	go func() {
		if err := b.mgr.Start(mctx); err != nil {
			ctrl.Log.Error(err, "The simulated agents' manager stopped")
		}
	}()
	return nil
}

// applyLVMCluster creates the LVMCluster of the benchmark.
func (b *bench) applyLVMCluster(ctx context.Context) error {
	raw, err := os.ReadFile(b.o.lvmcluster)
	if err != nil {
		return fmt.Errorf("read %s: %w", b.o.lvmcluster, err)
	}
	var lc lvmv1alpha1.LVMCluster
	if err := yaml.Unmarshal(raw, &lc); err != nil {
		return fmt.Errorf("parse %s: %w", b.o.lvmcluster, err)
	}
	lc.Namespace = b.o.namespace
	if err := b.admin.Create(ctx, &lc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create LVMCluster %s: %w", lc.Name, err)
	}
	return nil
}

// close stops everything the benchmark started.
func (b *bench) close() {
	if b.stopFn != nil {
		b.stopFn()
	}
	for _, p := range []*process{b.provisioner, b.operator, b.kwok} {
		p.stop()
	}
}

func mustCreate(path string) *os.File {
	f, err := os.Create(path)
	if err != nil {
		panic(err)
	}
	return f
}

// gitCommit is the working tree's commit, with "-dirty" when it has changes.
func gitCommit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty", "--abbrev=7").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
