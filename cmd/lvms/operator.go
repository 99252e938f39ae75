package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/claimevents"
	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
	"github.com/lvm-operator/lvm-operator/internal/controller/noderemoval"
	csicontroller "github.com/lvm-operator/lvm-operator/internal/csi/controller"
	lvmswebhook "github.com/lvm-operator/lvm-operator/internal/webhook"
)

// operatorFlags are the settings of `lvms operator`.
type operatorFlags struct {
	namespace          string
	nodeImage          string
	pullPolicy         string
	registrarImage     string
	livenessProbeImage string
	metricsAddr        string
	metricsCertDir     string
	profiling          bool
	probeAddr          string
	leaderElect        bool
	leaseDuration      time.Duration
	renewDeadline      time.Duration
	retryPeriod        time.Duration
	webhookPort        int
	webhookHost        string
	webhookCertDir     string
	webhookSelfCertDir string
	webhookCertMode    string
	webhookService     string
	webhookConfigName  string
	mutatingConfigName string
	csiSocket          string
	releaseVolumes     bool
	deleteClaims       bool
	podMutatingWebhook bool
	snapshotMetadata   bool
	// snapshotMetadataSidecarImage is the external-snapshot-metadata sidecar's image.
	snapshotMetadataSidecarImage string
	log                          *zap.Options
	// logLevel is --zap-log-level as given ("" when not set), passed on to the node agents.
	logLevel string
}

// podMutatingWebhookFlag turns on TopoLVM's pod webhook for the scheduler extender
// (config/components/scheduler-extender adds it with the webhook's configuration).
const podMutatingWebhookFlag = "pod-mutating-webhook"

func newOperatorCommand() *cobra.Command {
	f := operatorFlags{}
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the operator: LVMCluster controller and admission webhook",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runOperator(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(
		&f.namespace,
		"namespace",
		envOr("POD_NAMESPACE", "lvms-system"),
		"operator namespace (LVMCluster, operands)",
	)
	fl.StringVar(
		&f.nodeImage,
		"node-image",
		os.Getenv("LVMS_NODE_IMAGE"),
		"image of the node agent (lvms node); default: the image of this pod's operator container",
	)
	fl.StringVar(
		&f.pullPolicy,
		"node-image-pull-policy",
		string(corev1.PullIfNotPresent),
		"pull policy of the node agent image",
	)
	fl.StringVar(
		&f.registrarImage,
		"node-driver-registrar-image",
		"",
		"add the node-driver-registrar sidecar (default: registration served in process)",
	)
	fl.StringVar(
		&f.livenessProbeImage,
		"livenessprobe-image",
		"",
		"add the livenessprobe sidecar (default: health served in process)",
	)
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":8443",
		"metrics address, HTTPS with Kubernetes authentication and authorization (0 disables)")
	fl.StringVar(&f.metricsCertDir, "metrics-cert-dir", "",
		"directory with tls.crt and tls.key for the metrics server (default: a self-signed certificate)")
	fl.BoolVar(&f.profiling, profilingFlag, os.Getenv(profilingEnv) == "true", profilingUsage+
		"; the operator passes it on to the node agents")
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "health and readiness probe address")
	fl.BoolVar(&f.releaseVolumes, noderemoval.ReleaseVolumesFlag, false,
		"let LogicalVolumes of deleted Nodes finish deleting (their LVs, if the disks come back, are orphans)")
	fl.BoolVar(&f.deleteClaims, noderemoval.DeleteClaimsFlag, false,
		"delete the PersistentVolumeClaims of topolvm.io volumes on deleted Nodes, so StatefulSets recreate "+
			"them on other nodes (with a Delete reclaim policy their volumes go too, even if the machine comes back)")
	fl.BoolVar(&f.podMutatingWebhook, podMutatingWebhookFlag, false,
		"serve TopoLVM's pod webhook at "+lvmswebhook.PodMutatorPath+": annotate pods with unbound topolvm.io claims "+
			"for the scheduler extender (lvms scheduler); needs its MutatingWebhookConfiguration")
	fl.BoolVar(&f.snapshotMetadata, snapshotMetadataFlag, os.Getenv(snapshotMetadataEnv) == "true",
		"changed block tracking: issue the certificates of the node agents' snapshot metadata endpoints, of "+
			"`lvms snapshot-metadata` and of the external-snapshot-metadata sidecar, make the node agents serve, run "+
			"the sidecar's Deployment "+lvmcluster.SnapshotMetadataName+" and apply the SnapshotMetadataService "+
			lvmcluster.DriverName+" (needs that CRD; docs/changed-blocks.md); default: true if $"+snapshotMetadataEnv+
			" is \"true\" (how an OLM Subscription turns it on)")
	fl.StringVar(&f.snapshotMetadataSidecarImage, "snapshot-metadata-sidecar-image",
		envOr(snapshotMetadataSidecarImageEnv, lvmcluster.DefaultSnapshotMetadataSidecarImage),
		"image of the external-snapshot-metadata sidecar (with --"+snapshotMetadataFlag+")")
	fl.BoolVar(&f.leaderElect, "leader-elect", true, "elect a leader among replicas")
	// OpenShift's recommendation for control planes that may be slow (single-node clusters, busy
	// nodes), which LVMS uses too: a lease renewal that misses a 10 s deadline once must not stop
	// the only replica. The lease is released on shutdown, so a rolling update hands over at once.
	fl.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 137*time.Second, "leader election lease duration")
	fl.DurationVar(
		&f.renewDeadline,
		"leader-elect-renew-deadline",
		107*time.Second,
		"how long the leader retries renewing before it gives up",
	)
	fl.DurationVar(
		&f.retryPeriod,
		"leader-elect-retry-period",
		26*time.Second,
		"interval between leader election attempts",
	)
	fl.IntVar(&f.webhookPort, "webhook-port", 9443, "admission webhook port")
	fl.StringVar(&f.webhookHost, "webhook-host", "", "admission webhook bind address (empty: all interfaces)")
	fl.StringVar(
		&f.webhookCertDir,
		"webhook-cert-dir",
		"/tmp/k8s-webhook-server/serving-certs",
		"webhook serving certificate directory",
	)
	fl.StringVar(
		&f.webhookSelfCertDir,
		"webhook-self-cert-dir",
		"/tmp/lvms-webhook-certs",
		"with --webhook-cert-mode=self: where the operator writes the certificate it issued and serves it from "+
			"(writable; --webhook-cert-dir is for external mode)",
	)
	fl.StringVar(
		&f.webhookCertMode,
		"webhook-cert-mode",
		"self",
		"self: the operator issues and rotates its own certificate and injects the CA; external: the files in --webhook-cert-dir come from elsewhere (cert-manager)",
	)
	fl.StringVar(
		&f.webhookService,
		"webhook-service",
		"lvms-webhook-service",
		"name of the webhook Service (certificate DNS name)",
	)
	fl.StringVar(
		&f.webhookConfigName,
		"webhook-configuration",
		"lvms-validating-webhook-configuration",
		"ValidatingWebhookConfiguration to inject the CA into",
	)
	fl.StringVar(
		&f.mutatingConfigName,
		"mutating-webhook-configuration",
		"lvms-mutating-webhook-configuration",
		"MutatingWebhookConfiguration to inject the CA into",
	)
	fl.StringVar(
		&f.csiSocket,
		"csi-socket",
		"/run/topolvm/csi-topolvm.sock",
		"CSI Identity+Controller socket for the sidecars; empty disables the CSI controller",
	)
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

func runOperator(cmd *cobra.Command, f operatorFlags) error {
	setLogger(f.log, "operator")
	f.logLevel = logLevel(cmd.Flags())
	scheme, err := operatorScheme()
	if err != nil {
		return err
	}
	metrics, err := metricsOptions(f.metricsAddr, f.metricsCertDir, f.profiling)
	if err != nil {
		return err
	}
	cfg := ctrl.GetConfigOrDie()
	cacheOpts := namespacedCache(f.namespace, &appsv1.DaemonSet{}, &appsv1.Deployment{})
	policyServed, err := lvmcluster.NodeAgentPolicyServed(cfg)
	if err != nil {
		return err
	}
	if policyServed {
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
		WebhookServer: webhook.NewServer(
			webhook.Options{Host: f.webhookHost, Port: f.webhookPort, CertDir: f.servingCertDir()},
		),
		Cache: cacheOpts,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if f.nodeImage == "" {
		if f.nodeImage, err = ownImage(
			cmd.Context(),
			mgr.GetAPIReader(),
			f.namespace,
			os.Getenv("POD_NAME"),
		); err != nil {
			return err
		}
	}
	if err := setupOperator(cmd.Context(), mgr, f); err != nil {
		return err
	}
	return mgr.Start(cmd.Context())
}

// setupOperator adds the operator's controllers, metrics, CSI controller service, webhooks and
// probes to mgr.
func setupOperator(ctx context.Context, mgr ctrl.Manager, f operatorFlags) error {
	cluster, err := clusterID(ctx, mgr.GetAPIReader())
	if err != nil {
		return err
	}
	certsReady, err := setupWebhookCerts(mgr, f)
	if err != nil {
		return err
	}
	r := lvmcluster.New(mgr.GetClient(), mgr.GetEventRecorder("lvms-operator"), lvmcluster.Options{
		Namespace: f.namespace, NodeImage: f.nodeImage, ImagePullPolicy: corev1.PullPolicy(f.pullPolicy),
		RegistrarImage: f.registrarImage, LivenessProbeImage: f.livenessProbeImage, ClusterID: cluster,
		SnapshotMetadata: f.snapshotMetadata, SnapshotMetadataSidecarImage: f.snapshotMetadataSidecarImage,
		Profiling: f.profiling, LogLevel: f.logLevel,
	})
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up LVMCluster controller: %w", err)
	}
	if err := ctrlmetrics.Registry.Register(lvmcluster.NewCollector(mgr.GetClient(), f.namespace)); err != nil {
		return fmt.Errorf("register LVMCluster metrics: %w", err)
	}
	removal := noderemoval.New(mgr.GetClient(), f.namespace, noderemoval.Options{
		ReleaseVolumes: f.releaseVolumes, DeleteClaims: f.deleteClaims, APIReader: mgr.GetAPIReader(),
	})
	if err := removal.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up node-removal controller: %w", err)
	}
	if err := claimevents.Setup(mgr, claimevents.Options{
		Namespace: f.namespace,
	}); err != nil {
		return fmt.Errorf("set up claim events controller: %w", err)
	}
	if f.csiSocket != "" {
		if err := csicontroller.AddToManager(ctx, mgr, f.csiSocket); err != nil {
			return err
		}
	}
	if f.snapshotMetadata {
		if err := setupSnapshotMetadata(ctx, mgr, f); err != nil {
			return err
		}
	}
	// The webhooks serve only once their certificate exists; a failed registration ends mgr.Start.
	if err := mgr.Add(delayedSetup{ready: certsReady, what: "LVMCluster webhooks", setup: func() error {
		if f.podMutatingWebhook {
			lvmswebhook.SetupPodMutator(mgr)
		}
		return lvmswebhook.Setup(mgr, f.namespace)
	}}); err != nil {
		return fmt.Errorf("add LVMCluster webhook setup: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", webhookReady(mgr, certsReady)); err != nil {
		return fmt.Errorf("add ready check: %w", err)
	}
	return nil
}

// The self-signed certificate mode keeps its certificate in a Secret of the operator namespace and
// injects the CA into the validating and mutating webhook configurations (it may update only those
// two, by name: renaming them with --webhook-configuration or --mutating-webhook-configuration needs
// the same names in the role); the operator reads its own Pod to learn the image the node agent runs.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,resourceNames=lvms-validating-webhook-configuration;lvms-mutating-webhook-configuration,verbs=update;patch
// +kubebuilder:rbac:groups="",namespace=lvms-system,resources=secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",namespace=lvms-system,resources=pods,verbs=get

// setupWebhookCerts returns a channel closed once the webhook serving certificate is in place: at
// once in external mode, after the rotator has written it in self mode.
func setupWebhookCerts(mgr ctrl.Manager, f operatorFlags) (<-chan struct{}, error) {
	ready := make(chan struct{})
	switch f.webhookCertMode {
	case "external":
		close(ready)
		return ready, nil
	case "self":
		secret := types.NamespacedName{Namespace: f.namespace, Name: "lvms-webhook-server-cert"}
		if err := mgr.Add(certFiles{
			reader:  mgr.GetAPIReader(),
			secret:  secret,
			dir:     f.webhookSelfCertDir,
			poll:    time.Second,
			refresh: time.Minute,
		}); err != nil {
			return nil, fmt.Errorf("add webhook certificate copier: %w", err)
		}
		err := rotator.AddRotator(mgr, &rotator.CertRotator{
			SecretKey:      secret,
			CertDir:        f.webhookSelfCertDir,
			CAName:         "lvms-ca",
			CAOrganization: "lvms",
			DNSName:        fmt.Sprintf("%s.%s.svc", f.webhookService, f.namespace),
			IsReady:        ready,
			Webhooks: []rotator.WebhookInfo{
				{Name: f.webhookConfigName, Type: rotator.Validating},
				{Name: f.mutatingConfigName, Type: rotator.Mutating},
			},
			FieldOwner:            lvmcluster.FieldOwner,
			RequireLeaderElection: false,
		})
		if err != nil {
			return nil, fmt.Errorf("set up webhook certificate rotation: %w", err)
		}
		return ready, nil
	default:
		return nil, fmt.Errorf("--webhook-cert-mode %q: use self or external", f.webhookCertMode)
	}
}

// servingCertDir is where the webhook server reads its certificate: the operator's own copy of what
// it issued (self), or the files that come from elsewhere (external).
func (f operatorFlags) servingCertDir() string {
	if f.webhookCertMode == "self" {
		return f.webhookSelfCertDir
	}
	return f.webhookCertDir
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

// errCertNotReady is the readiness failure while the webhook certificate is being issued.
var errCertNotReady = errors.New("webhook serving certificate not written yet")

// webhookReady reports ready once the webhook server serves. It must not touch the webhook server
// before the certificate exists: asking the manager for it adds it, and a server started without
// its certificate files ends the operator.
func webhookReady(mgr ctrl.Manager, certsReady <-chan struct{}) healthz.Checker {
	return func(req *http.Request) error {
		select {
		case <-certsReady:
			return mgr.GetWebhookServer().StartedChecker()(req)
		default:
			return errCertNotReady
		}
	}
}

// delayedSetup is a manager Runnable that runs setup once ready is closed. An error from setup is
// returned from Start, which stops the manager (and so the operator) with that error. It does not
// wait for leader election: every replica serves the webhook.
type delayedSetup struct {
	ready <-chan struct{}
	what  string
	setup func() error
}

// Start waits for ready (or the end of ctx) and runs setup.
func (d delayedSetup) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-d.ready:
	}
	if err := d.setup(); err != nil {
		return fmt.Errorf("set up %s: %w", d.what, err)
	}
	return nil
}

// NeedLeaderElection is false: the setup runs on every replica.
func (delayedSetup) NeedLeaderElection() bool { return false }
