// Package envtest holds the API-level integration tests: the CRDs of config/crd/bases installed into a
// real kube-apiserver and etcd (built by hack/kube-assets.sh), and the schema validation, defaulting
// and status subresources checked against it. The LVMCluster admission webhook of internal/webhook
// runs in the test process; its webhook configurations are installed only while
// TestAPICompat's webhook half runs, so every other test sees the CRDs alone.
package envtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	lvmswebhook "github.com/lvm-operator/lvm-operator/internal/webhook"
)

const testNamespace = "lvms-system"

var (
	// k8s is the client of the suite's apiserver, set up once in TestMain. Its admission warnings go
	// to warnings.
	k8s client.Client
	// warnings collects the admission warnings k8s receives.
	warnings = &warningRecorder{}
	// webhookConfig and mutatingConfig are the webhook configurations envtest installed, pointing at
	// the webhook server of this process; setWebhook installs and removes them.
	webhookConfig  *admissionv1.ValidatingWebhookConfiguration
	mutatingConfig *admissionv1.MutatingWebhookConfiguration
	// restConfig is the admin's config of the suite's apiserver (system:masters), for tests that
	// build their own clients, such as impersonating ones.
	restConfig *rest.Config
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "envtest: KUBEBUILDER_ASSETS is not set; run `make test-unit`, or "+
			"KUBEBUILDER_ASSETS=$(bash hack/kube-assets.sh | tail -1) go test ./dev/envtest/")
		return 1
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join("..", "..", "config", "webhook")},
		},
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "envtest: start apiserver: %v\n", err)
		_ = env.Stop() // a failed CRD install leaves etcd and the apiserver running otherwise
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "envtest: stop apiserver: %v\n", err)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := setUp(ctx, cfg, &env.WebhookInstallOptions); err != nil {
		fmt.Fprintf(os.Stderr, "envtest: %v\n", err)
		return 1
	}
	return m.Run()
}

// setUp starts the webhook server, creates the client and the operator namespace, and removes the
// webhook configuration so that tests start with the CRDs alone.
func setUp(ctx context.Context, cfg *rest.Config, wh *envtest.WebhookInstallOptions) error {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, lvmv1alpha1.AddToScheme, topolvmv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return fmt.Errorf("scheme: %w", err)
		}
	}
	if err := startWebhookServer(ctx, cfg, scheme, wh); err != nil {
		return err
	}
	restConfig = rest.CopyConfig(cfg)
	clientCfg := rest.CopyConfig(cfg)
	clientCfg.WarningHandlerWithContext = warnings
	var err error
	k8s, err = client.New(clientCfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}
	if err := k8s.Create(ctx, ns); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	var list admissionv1.ValidatingWebhookConfigurationList
	if err := k8s.List(ctx, &list); err != nil || len(list.Items) != 1 {
		return fmt.Errorf("find the installed webhook configuration (%d found): %w", len(list.Items), err)
	}
	webhookConfig = list.Items[0].DeepCopy()
	var mutating admissionv1.MutatingWebhookConfigurationList
	if err := k8s.List(ctx, &mutating); err != nil || len(mutating.Items) != 1 {
		return fmt.Errorf("find the installed mutating webhook configuration (%d found): %w", len(mutating.Items), err)
	}
	mutatingConfig = mutating.Items[0].DeepCopy()
	return removeWebhookConfig(ctx)
}

func startWebhookServer(
	ctx context.Context,
	cfg *rest.Config,
	scheme *runtime.Scheme,
	wh *envtest.WebhookInstallOptions,
) error {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir,
		}),
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if err := lvmswebhook.Setup(mgr, testNamespace); err != nil {
		return fmt.Errorf("set up webhook: %w", err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "envtest: manager stopped: %v\n", err)
		}
	}()
	return nil
}
