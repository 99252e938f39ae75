package main

import (
	"fmt"
	"maps"
	"os"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
	"github.com/lvm-operator/lvm-operator/internal/operator"
	"github.com/lvm-operator/lvm-operator/internal/tlsprofile"
)

// operatorFlags are the settings of `lvms operator`: the operator's own (operator.Options) and
// those of its process (manager, metrics, leader election, logging).
type operatorFlags struct {
	operator.Options
	tls            tlsprofile.Flags
	metricsAddr    string
	metricsCertDir string
	probeAddr      string
	leaderElect    bool
	leaseDuration  time.Duration
	renewDeadline  time.Duration
	retryPeriod    time.Duration
	log            *zap.Options
}

func newOperatorCommand() *cobra.Command {
	f := &operatorFlags{}
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the operator: LVMCluster controller and admission webhook",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runOperator(cmd, f)
		},
	}
	fl := cmd.Flags()
	f.AddFlags(fl)
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":8443",
		"metrics address, HTTPS with Kubernetes authentication and authorization (0 disables)")
	fl.StringVar(&f.metricsCertDir, "metrics-cert-dir", "",
		"directory with tls.crt and tls.key for the metrics server (default: a self-signed certificate)")
	fl.BoolVar(&f.Profiling, profilingFlag, os.Getenv(profilingEnv) == "true", profilingUsage+
		"; the operator passes it on to the node agents")
	f.tls.AddFlags(fl)
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "health and readiness probe address")
	fl.BoolVar(&f.leaderElect, "leader-elect", true, "elect a leader among replicas")
	// OpenShift's recommendation for control planes that may be slow (single-node clusters, busy
	// nodes), which LVMS uses too: a lease renewal that misses a 10 s deadline once must not stop
	// the only replica. The lease is released on shutdown, so a rolling update hands over at once.
	fl.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 137*time.Second, "leader election lease duration")
	fl.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 107*time.Second,
		"how long the leader retries renewing before it gives up")
	fl.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 26*time.Second,
		"interval between leader election attempts")
	f.log = addLogFlags(fl)
	return cmd
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func operatorScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, lvmv1alpha1.AddToScheme, topolvmv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	return s, nil
}

func runOperator(cmd *cobra.Command, f *operatorFlags) error {
	setLogger(f.log, "operator")
	f.LogLevel = logLevel(cmd.Flags())
	f.PodName = os.Getenv("POD_NAME")
	scheme, err := operatorScheme()
	if err != nil {
		return err
	}
	if f.TLS, err = f.tls.Parse(); err != nil {
		return err
	}
	metrics, err := metricsOptions(f.metricsAddr, f.metricsCertDir, f.Profiling, f.TLS)
	if err != nil {
		return err
	}
	cfg := ctrl.GetConfigOrDie()
	cacheOpts := operatorCache(f.Namespace)
	if f.NodeAgentPolicy, err = lvmcluster.NodeAgentPolicyServed(cfg); err != nil {
		return err
	}
	if f.NodeAgentPolicy {
		maps.Copy(cacheOpts.ByObject, lvmcluster.NodeAgentPolicyCache())
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metrics,
		HealthProbeBindAddress: f.probeAddr,
		LeaderElection:         f.leaderElect,
		LeaderElectionID:       "lvms-operator.lvm.topolvm.io",
		LeaseDuration:          &f.leaseDuration,
		RenewDeadline:          &f.renewDeadline,
		RetryPeriod:            &f.retryPeriod,
		// Safe: runOperator returns once the manager stops, so nothing acts after the release.
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 f.WebhookServer(),
		Cache:                         cacheOpts,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := operator.Setup(cmd.Context(), mgr, f.Options); err != nil {
		return err
	}
	return mgr.Start(cmd.Context())
}

// operatorCache is the operator's cache: namespacedCache with its DaemonSet and Deployment, and the
// Nodes without the images their kubelets list (up to 50 per node, most of a Node's size), which
// nothing here reads: the scale benchmark (docs/scale.md) caches thousands of Nodes.
func operatorCache(namespace string) cache.Options {
	opts := namespacedCache(namespace, &appsv1.DaemonSet{}, &appsv1.Deployment{})
	setByObject(opts, &corev1.Node{}, cache.ByObject{Transform: withoutImages})
	return opts
}

// withoutImages strips a cached object's managedFields and, of a Node, its status.images.
func withoutImages(o any) (any, error) {
	o, err := cache.TransformStripManagedFields()(o)
	if n, ok := o.(*corev1.Node); ok {
		n.Status.Images = nil
	}
	return o, err
}

// namespacedCache limits the manager's cache of the LVM objects that live in the operator namespace
// (and of extra kinds) to that namespace; everything else is cached cluster-wide. The cache keeps
// no managedFields, which nothing here reads: writes go by server-side apply and patches, and an
// update without them leaves them as they are. Decoded, they were the largest part of what each
// LogicalVolume added to the operator's heap (heap profiles at 0 and 300 LVs, 2026-11-27).
func namespacedCache(namespace string, extra ...client.Object) cache.Options {
	inNamespace := cache.ByObject{Namespaces: map[string]cache.Config{namespace: {}}}
	byObject := map[client.Object]cache.ByObject{
		&lvmv1alpha1.LVMVolumeGroup{}:           inNamespace,
		&lvmv1alpha1.LVMVolumeGroupNodeStatus{}: inNamespace,
		&lvmv1alpha1.LVMCluster{}:               inNamespace,
	}
	for _, o := range extra {
		byObject[o] = inNamespace
	}
	return cache.Options{ByObject: byObject, DefaultTransform: cache.TransformStripManagedFields()}
}
