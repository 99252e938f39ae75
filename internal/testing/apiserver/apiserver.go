// Package apiserver starts a real kube-apiserver and etcd (controller-runtime's envtest, from the
// binaries hack/kube-assets.sh builds) for a test, and stops them when it ends.
package apiserver

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// SnapshotModule is the module (path@version) whose config/crd holds the VolumeSnapshot CRDs that
// envtests install; the product does not depend on it, ModuleDir downloads it.
const SnapshotModule = "github.com/kubernetes-csi/external-snapshotter/client/v8@v8.7.0"

// SnapshotCRDs is the directory of the VolumeSnapshot CRDs of SnapshotModule.
func SnapshotCRDs() (string, error) {
	dir, err := ModuleDir(SnapshotModule)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "config", "crd"), nil
}

// ModuleDir is the directory of module modVersion (path@version) in the module cache, downloaded
// by `go mod download` when it is not there.
func ModuleDir(modVersion string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", modVersion).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", modVersion, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no directory (%s): %w", modVersion, info.Error, err)
	}
	return info.Dir, nil
}
