// Package envtest holds the API-level integration tests: the CRDs of config/crd/bases installed into a
// real kube-apiserver and etcd (built by hack/kube-assets.sh), and the schema validation, defaulting
// and status subresources checked against it.
package envtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

const testNamespace = "lvms-system"

// k8s is the client of the suite's apiserver, set up once in TestMain.
var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "envtest: KUBEBUILDER_ASSETS is not set; run `make test-unit`, or "+
			"KUBEBUILDER_ASSETS=$(bash hack/kube-assets.sh | tail -1) go test ./test/envtest/")
		return 1
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
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

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, lvmv1alpha1.AddToScheme, topolvmv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			fmt.Fprintf(os.Stderr, "envtest: scheme: %v\n", err)
			return 1
		}
	}
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintf(os.Stderr, "envtest: client: %v\n", err)
		return 1
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		fmt.Fprintf(os.Stderr, "envtest: create namespace: %v\n", err)
		return 1
	}
	return m.Run()
}
