package claimevents_test

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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/claimevents"
)

const (
	operatorNamespace = "lvms-system"
	// recheck stands in for the controller's one minute, so that the tests see several rechecks.
	recheck = 200 * time.Millisecond
)

var k8s client.Client

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set; run `make test-unit`")
		return 1
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start envtest: %v\n", err)
		_ = env.Stop() // a failed CRD install leaves etcd and the apiserver running otherwise
		return 1
	}
	defer func() { _ = env.Stop() }()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = lvmv1alpha1.AddToScheme(scheme)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := startManager(ctx, cfg, scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// startManager runs the claim events controller as the operator does, with a short recheck.
func startManager(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) error {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(logSink())))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	opts := claimevents.Options{Namespace: operatorNamespace, Recheck: recheck}
	if err := claimevents.Setup(mgr, opts); err != nil {
		return fmt.Errorf("setup controller: %w", err)
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
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 20*time.Second, true,
		func(ctx context.Context) (bool, error) {
			last = check(ctx)
			return last == nil, nil
		})
	if err != nil {
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
}
