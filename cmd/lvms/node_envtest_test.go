//go:build !guest

package main

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
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
	found := false
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*topolvmv1.LogicalVolume); !ok {
			continue
		}
		if by.Field == nil || by.Field.String() != "spec.nodeName=node-a" {
			t.Fatalf("LogicalVolumes cached by field %v, want spec.nodeName=node-a", by.Field)
		}
		found = true
	}
	if !found {
		t.Fatalf("cache options %v have no entry for LogicalVolumes", opts.ByObject)
	}
	checkOwnObjectsOnly(t, cfg, scheme, opts)
}

// checkOwnObjectsOnly: with two nodes and their statuses in the API server, the agent's cache of
// node-a holds node-a's Node and LVMVolumeGroupNodeStatus only.
func checkOwnObjectsOnly(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme, opts cache.Options) {
	ctx := t.Context()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lvms-system"}}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"node-a", "node-b"} {
		if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
		st := &lvmv1alpha1.LVMVolumeGroupNodeStatus{ObjectMeta: metav1.ObjectMeta{Namespace: "lvms-system", Name: n}}
		if err := c.Create(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	opts.Scheme = scheme
	ca, err := cache.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		t.Fatal("cache did not start")
	}
	var nodes corev1.NodeList
	if err := ca.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	var statuses lvmv1alpha1.LVMVolumeGroupNodeStatusList
	if err := ca.List(ctx, &statuses, client.InNamespace("lvms-system")); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 1 || nodes.Items[0].Name != "node-a" ||
		len(statuses.Items) != 1 || statuses.Items[0].Name != "node-a" {
		t.Errorf("cached %d Nodes and %d node statuses, want node-a's only: %v, %v", len(nodes.Items),
			len(statuses.Items), nodes.Items, statuses.Items)
	}
}
