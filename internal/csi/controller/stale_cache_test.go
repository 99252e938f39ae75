package controller

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// blindCache plays a cache that has not seen the LogicalVolumes yet: every List comes back empty.
type blindCache struct{ cache.Cache }

func (blindCache) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// TestDeleteVolumeDoesNotTrustACacheMiss: a controller whose cache misses the volume (lagging, or not
// synced after a restart) asks the API server before it calls the volume gone, and deletes it. Trusting
// the miss would report success and leave the LogicalVolume, and its LV, behind.
func TestDeleteVolumeDoesNotTrustACacheMiss(t *testing.T) {
	name := uniqueName("stale")
	v := mustCreate(t, createReq(name))

	c, err := cache.New(restCfg, cache.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	blind, err := New(t.Context(), Options{Client: k8s, Cache: blindCache{c}, APIReader: k8s, Clock: frozen})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(t.Context()) }()
	if !c.WaitForCacheSync(t.Context()) {
		t.Fatal("cache did not sync")
	}
	if _, err := blind.DeleteVolume(testCtx(t), &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()}); err != nil {
		t.Fatalf("DeleteVolume: %v", err)
	}
	if lv := getLV(t, name); lv != nil && lv.DeletionTimestamp == nil {
		t.Fatalf("DeleteVolume trusted the cache miss: LogicalVolume %s was not deleted", name)
	}
}
