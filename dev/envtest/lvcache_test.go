package envtest

import (
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/nodeagent"
)

// TestNodeAgentCachesOnlyItsNodesLogicalVolumes: with the CRD's selectable field spec.nodeName, the
// cache the node agent builds holds its node's LogicalVolumes and no other node's; and the API
// server refuses a selection by a field the CRD does not list as a bad request, which is how
// LogicalVolumesOfNode tells a server without selectable fields.
func TestNodeAgentCachesOnlyItsNodesLogicalVolumes(t *testing.T) {
	ctx := t.Context()
	prefix := uniqueName("sel")
	for i, node := range []string{"node-a", "node-a", "node-b"} {
		lv := newLogicalVolume("1Gi")
		lv.Name = prefix + "-" + node + "-" + string(rune('0'+i))
		lv.Spec.NodeName = node
		if err := k8s.Create(ctx, lv); err != nil {
			t.Fatalf("create: %v", err)
		}
		t.Cleanup(func() { _ = k8s.Delete(ctx, lv) })
	}

	by, ok, err := nodeagent.LogicalVolumesOfNode(ctx, k8s, "node-a")
	if err != nil || !ok {
		t.Fatalf("LogicalVolumesOfNode = %v, %v: the API server should select LogicalVolumes by %s",
			ok, err, nodeagent.NodeNameField)
	}
	c, err := cache.New(restConfig, cache.Options{
		Scheme: k8s.Scheme(), ByObject: map[client.Object]cache.ByObject{&topolvmv1.LogicalVolume{}: by},
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	var list topolvmv1.LogicalVolumeList
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, lv := range list.Items {
		if strings.HasPrefix(lv.Name, prefix) {
			got = append(got, lv.Name)
		}
	}
	slices.Sort(got)
	if want := []string{prefix + "-node-a-0", prefix + "-node-a-1"}; !slices.Equal(got, want) {
		t.Errorf("node-a's cache holds %v, want %v", got, want)
	}

	err = k8s.List(ctx, &topolvmv1.LogicalVolumeList{}, client.MatchingFields{"spec.deviceClass": "vg1"})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("a selection by a field the CRD does not list: err = %v, want a bad request", err)
	}
}
