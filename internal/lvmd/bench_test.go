package lvmd_test

import (
	"fmt"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvm/lvmtest"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// BenchmarkCreateRemoveThinLV is lvmd's own cost of the provisioning hot path, a thin CreateLV and its
// RemoveLV, with lvm2 played by the in-memory fake: planning against the cached state, reserving
// capacity, the one lvcreate's arguments, applying the result to the cache, and the capacity
// notification. With 1,000 thin LVs already in the pool, as on a busy node.
func BenchmarkCreateRemoveThinLV(b *testing.B) {
	f := lvmtest.New()
	f.AddVG("vg", 10000*gib, extent, lvm.Tag)
	f.AddThinPool("vg", "pool", 4000*gib)
	svc := serviceOn(b, f)
	ctx := b.Context()
	for i := range 1000 {
		if _, err := svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: fmt.Sprintf("pvc-%d", i), DeviceClass: "thin",
			Size: gib}); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		name := fmt.Sprintf("bench-%d", i)
		i++
		if _, err := svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: name, DeviceClass: "thin", Size: gib}); err != nil {
			b.Fatal(err)
		}
		if err := svc.RemoveLV(ctx, name, "thin"); err != nil {
			b.Fatal(err)
		}
	}
}
