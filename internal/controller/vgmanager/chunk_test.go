package vgmanager_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
)

const tib = 1024 * gib

// TestChunkSizeAddressesThePool: lvm2 refuses a thin pool whose chunk size cannot address its data
// (128 KiB chunks address at most 31.75 TiB), and a pool's chunk size never changes. With chunkSize
// unset the Static policy doubles the default until it addresses the new pool; a chunkSize set by
// the class that cannot is refused with the size that would do, before any lvcreate.
func TestChunkSizeAddressesThePool(t *testing.T) {
	for _, tc := range []struct {
		name      string
		disk      uint64
		chunkSize *resource.Quantity
		wantChunk string // the pool's lvcreate -c, "" when refused
		wantErr   string
	}{
		{name: "small pool, default", disk: 8 * gib, wantChunk: "-c 131072b"},
		{name: "31 TiB, default", disk: 34 * tib, wantChunk: "-c 131072b"},
		{name: "40 TiB, default", disk: 45 * tib, wantChunk: "-c 262144b"},
		{name: "100 TiB, default", disk: 111 * tib, wantChunk: "-c 524288b"},
		{name: "40 TiB, 512Ki set", disk: 45 * tib, chunkSize: ptr.To(resource.MustParse("512Ki")),
			wantChunk: "-c 524288b"},
		{name: "40 TiB, 128Ki set", disk: 45 * tib, chunkSize: ptr.To(resource.MustParse("128Ki")),
			wantErr: "set chunkSize to 256Ki or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(nil, nil)
			n.disk("/dev/sdb", tc.disk)
			spec := thinSpec("")
			spec.ThinPoolConfig.ChunkSize = tc.chunkSize
			out, err := n.manager().Reconcile(ctrl.LoggerInto(t.Context(), testr.New(t)),
				vgmanager.Input{Name: "vg1", NodeName: "node-a", Spec: spec}, vgmanager.Hooks{})
			var pool string
			for _, m := range n.modifications() {
				if strings.Contains(m, "--type thin-pool") {
					pool = m
				}
			}
			if tc.wantErr != "" {
				if pool != "" || err == nil || !strings.Contains(err.Error(), tc.wantErr) ||
					!strings.Contains(out.Status.Reason, tc.wantErr) {
					t.Fatalf("pool created with %q, error %v, status %+v; want none and errors saying %q",
						pool, err, out.Status, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			if !strings.Contains(pool, " "+tc.wantChunk+" ") || out.Status.Status != lvmv1alpha1.VGStatusReady {
				t.Errorf("pool created with %q, status %+v; want %s", pool, out.Status, tc.wantChunk)
			}
		})
	}
}

// TestPoolGrowsOnlyAsFarAsItsChunksAddress: a pool of 64 KiB chunks (at most 15.875 TiB of data)
// whose class asks for more of a grown volume group is extended to what its chunks address, once,
// and the plan says so; lvm2 would refuse any larger size.
func TestPoolGrowsOnlyAsFarAsItsChunksAddress(t *testing.T) {
	n := newNode(nil, nil)
	n.disk("/dev/sdb", 20*tib)
	spec := thinSpec("")
	spec.ThinPoolConfig.SizePercent = 50
	spec.ThinPoolConfig.ChunkSize = ptr.To(resource.MustParse("64Ki"))
	in := vgmanager.Input{Name: "vg1", Spec: spec}
	if out := n.reconcile(t, in); out.Status.Status != lvmv1alpha1.VGStatusReady {
		t.Fatalf("new pool: %+v", out.Status)
	}
	n.fake.Reset()
	spec.ThinPoolConfig.SizePercent = 90
	out := n.reconcile(t, vgmanager.Input{Name: "vg1", Spec: spec})
	// 255 × 16320 × 4 KiB of metadata / 64 bytes × 64 KiB, in 4 MiB extents.
	want := []string{"lvm lvextend -y -l 4161600 vg1/tp"}
	if got := n.modifications(); !slices.Equal(got, want) || out.Status.Status != lvmv1alpha1.VGStatusReady {
		t.Fatalf("changes %q (want %q), status %+v", got, want, out.Status)
	}
	n.fake.Reset()
	if n.reconcile(t, in); len(n.modifications()) != 0 {
		t.Errorf("a pool at its chunks' limit extended again: %q", n.modifications())
	}
}
