//go:build !guest

package main

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

// TestNodeCacheSelectsTheNodesLogicalVolumes: against a real API server with the install's CRDs,
// the node agent's cache options hold only the node's LogicalVolumes, found with the probe's own
// mapper (no discovery).
func TestNodeCacheSelectsTheNodesLogicalVolumes(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set; run `make test-unit`")
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	scheme, err := operatorScheme()
	if err != nil {
		t.Fatal(err)
	}
	opts, err := nodeCache(t.Context(), cfg, scheme, "lvms-system", "node-a")
	if err != nil {
		t.Fatalf("nodeCache: %v", err)
	}
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*topolvmv1.LogicalVolume); !ok {
			continue
		}
		if by.Field == nil || by.Field.String() != "spec.nodeName=node-a" {
			t.Fatalf("LogicalVolumes cached by field %v, want spec.nodeName=node-a", by.Field)
		}
		return
	}
	t.Fatalf("cache options %v have no entry for LogicalVolumes", opts.ByObject)
}
