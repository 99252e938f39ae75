// Package apiserver starts a real kube-apiserver and etcd (controller-runtime's envtest, from the
// binaries hack/kube-assets.sh builds) for a test, and stops them when it ends.
package apiserver

import (
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Start starts the API server of env (a zero Environment when nil) and returns its config. It
// fails the test when KUBEBUILDER_ASSETS is not set, saying how to set it.
func Start(t testing.TB, env *envtest.Environment) *rest.Config {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set; run `make test-unit`, or " +
			"KUBEBUILDER_ASSETS=$(bash hack/kube-assets.sh | tail -1) go test ./<package>/")
	}
	if env == nil {
		env = &envtest.Environment{}
	}
	cfg, err := env.Start()
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	if err != nil {
		t.Fatalf("start envtest: %v", err)
	}
	return cfg
}
