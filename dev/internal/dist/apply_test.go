package dist

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lvm-operator/lvm-operator/internal/testing/kustomize"
)

// TestInstallAppliesToAPIServer applies dist/install.yaml the way the README says (server-side
// apply) to a real kube-apiserver: every object must be accepted (schemas, RBAC references, the
// webhook configuration), then read back.
func TestInstallAppliesToAPIServer(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal(
			"KUBEBUILDER_ASSETS is not set; run `make test-unit`, or KUBEBUILDER_ASSETS=$(bash hack/kube-assets.sh | tail -1) go -C dev test ./internal/dist/",
		)
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "..", InstallFile))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kustomize.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		t.Fatalf("start apiserver: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		err := c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
			client.FieldOwner("lvms-install-test"), client.ForceOwnership)
		if err != nil {
			t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	for _, o := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(o), got); err != nil {
			t.Errorf("read back %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	t.Logf("applied and read back %d objects", len(objs))
}
