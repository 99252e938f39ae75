package lvmcluster_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgcleanup"
	"github.com/lvm-operator/lvm-operator/internal/testing/apiserver"
	lvmswebhook "github.com/lvm-operator/lvm-operator/internal/webhook"
)

const operatorNamespace = "lvms-system"

var k8s client.Client

// restCfg reaches the API server for requests the controller-runtime client does not make (tables).
var restCfg *rest.Config

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set; run `make test-unit`")
		return 1
	}
	snapshotCRDs, err := apiserver.SnapshotCRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	root := filepath.Join("..", "..", "..")
	env := &envtest.Environment{
		CRDDirectoryPaths: []string{
			filepath.Join(root, "config", "crd", "bases"),
			snapshotCRDs,
		},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "config", "webhook")}},
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start envtest: %v\n", err)
		_ = env.Stop() // a failed CRD install leaves etcd and the apiserver running otherwise
		return 1
	}
	cfg.QPS, cfg.Burst = 500, 1000 // the tests poll the API; keep client-side throttling out of the way
	restCfg = cfg
	defer func() { _ = env.Stop() }()

	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = lvmv1alpha1.AddToScheme(scheme)
	_ = topolvmv1.AddToScheme(scheme)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := startManager(ctx, cfg, scheme, &env.WebhookInstallOptions); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func startManager(
	ctx context.Context,
	cfg *rest.Config,
	scheme *runtime.Scheme,
	wh *envtest.WebhookInstallOptions,
) error {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(logSink())))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// As the operator's (cmd/lvms): the policy and its binding by their one name.
		Cache: cache.Options{ByObject: lvmcluster.NodeAgentPolicyCache()},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir,
		}),
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	r := lvmcluster.New(mgr.GetClient(), mgr.GetEventRecorder("lvms-operator"), lvmcluster.Options{
		Namespace: operatorNamespace, NodeImage: "example.com/lvms:test", ImagePullPolicy: corev1.PullIfNotPresent,
		NodeAgentPolicy: true,
	})
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setup controller: %w", err)
	}
	// As the operator: the release of deleted LVMVolumeGroups no node claims.
	if err := vgcleanup.New(mgr.GetClient(), mgr.GetAPIReader(), operatorNamespace).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setup volume group release: %w", err)
	}
	if err := lvmswebhook.Setup(mgr, operatorNamespace); err != nil {
		return fmt.Errorf("setup webhook: %w", err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "manager stopped: %v\n", err)
		}
	}()
	return nil
}

// logSink keeps controller logs quiet unless LVMS_TEST_VERBOSE is set.
func logSink() io.Writer {
	if os.Getenv("LVMS_TEST_VERBOSE") != "" {
		return os.Stderr
	}
	return io.Discard
}

// eventually retries check until it returns nil or the timeout passes. Tests only: it waits for a
// controller running in the background.
func eventually(t *testing.T, what string, check func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true,
		func(ctx context.Context) (bool, error) {
			last = check(ctx)
			return last == nil, nil
		})
	if err != nil {
		if last = check(context.Background()); last == nil {
			return
		}
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
}

// consistently checks, every 50 ms for 2 s, that check keeps returning nil: a controller running in
// the background must leave something as it is.
func consistently(t *testing.T, what string, check func(ctx context.Context) error) {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if err := check(context.Background()); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}
