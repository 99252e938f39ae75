//go:build guest

package lvmd_test

import (
	"bytes"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// TestGuestChunkedZeroAndCopy runs the zeroing of a deleted thick volume and the copy of a thick
// snapshot restore on real lvm2 in chunks of 3 MiB (the product's are 4 GiB, so that no command's time
// grows with the volume's size): the chunked blkdiscard leaves none of the old tenant's data on the
// extents the next volume gets, and the chunked dd restores every MiB of the snapshot at its place,
// the last chunk a partial one.
func TestGuestChunkedZeroAndCopy(t *testing.T) {
	g := newGuestEnv(t)
	ctx := t.Context()
	classes, err := lvmd.NewDeviceClassManager(g.cfg)
	g.must(err)
	svc, err := lvmd.NewService(lvmd.Options{Executor: g.host, Classes: classes, ChunkBytes: 3 * mib})
	g.must(err)
	g.must(svc.Refresh(ctx))

	t.Run("zero", func(t *testing.T) { g.thickTenantSwap(t, svc) })
	t.Run("copy", func(t *testing.T) {
		const size = 16 << 20
		// Every MiB holds its own byte, so a chunk copied to the wrong place shows.
		want := make([]byte, 0, size)
		for i := range size >> 20 {
			want = append(want, bytes.Repeat([]byte{byte('a' + i)}, 1<<20)...)
		}
		orig, err := svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "corig", DeviceClass: "thick", Size: size})
		g.must(err)
		g.must(write(orig.Path, want))
		_, err = svc.CreateSnapshot(ctx,
			lvmd.SnapshotRequest{Name: "csnap", DeviceClass: "thick", Source: "corig", Size: size, ReadOnly: true})
		g.must(err)
		g.must(fill(orig.Path, 'Z', size))
		restored, err := svc.CreateSnapshot(ctx,
			lvmd.SnapshotRequest{Name: "crestored", DeviceClass: "thick", Source: "csnap", Size: size})
		g.must(err)
		got, err := readAll(restored.Path, size)
		g.must(err)
		for i := 0; i < size; i += 1 << 20 {
			if !bytes.Equal(got[i:i+1<<20], want[i:i+1<<20]) {
				t.Fatalf("MiB %d of the restored LV holds %q..., want %q...", i>>20, got[i:i+8], want[i:i+8])
			}
		}
		for _, name := range []string{"crestored", "csnap", "corig"} {
			g.must(svc.RemoveLV(ctx, name, "thick"))
		}
	})
}
