//go:build guest

package vgmanager_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// TestGuestChunkSizeLimitOfLVM2 checks the limit the product sizes chunks by against real lvm2: on a
// 72 TiB volume group (its first MiB on a guest disk, for lvm2's label and metadata, the rest a
// dm-zero target), `lvcreate --test` of a thin pool of exactly the data size MaxPoolBytes says a
// chunk size addresses is accepted, and one more extent is refused with lvm2's "cannot address
// more" error. The 40 TiB pool that 128 KiB chunks cannot address is accepted with the chunk size
// ChunkSizeFor picks. --test: lvm2 checks the pool's parameters and changes nothing.
func TestGuestChunkSizeLimitOfLVM2(t *testing.T) {
	disk := guestDisks(t)[6]
	const vg, extent = "chunkvg", 4 << 20
	const sectors = 72 << 40 >> 9
	g := newGuest(t, nil, nil)
	table := filepath.Join(t.TempDir(), "table")
	content := fmt.Sprintf("0 2048 linear %s 0\n2048 %d zero\n", disk, sectors-2048)
	if err := os.WriteFile(table, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	g.sh("dmsetup", "create", "--noudevsync", "lvms-chunk", table)
	g.sh("dmsetup", "mknodes", "lvms-chunk") // no udev in the guest
	dev := "/dev/mapper/lvms-chunk"
	// The disk shows the same PV label as its first MiB mapped here: lvm2 looks at the mapping only.
	only := "--config=devices { global_filter = [ \"a|^" + dev + "$|\", \"r|.*|\" ] }"
	t.Cleanup(func() {
		g.try("lvm", "vgremove", only, "-f", "-y", vg)
		g.try("lvm", "pvremove", only, "-ff", "-y", dev)
		g.try("dmsetup", "remove", "lvms-chunk")
		g.try("wipefs", "--all", "--force", disk)
	})
	g.sh("lvm", "vgcreate", only, "-y", "-s", "4m", vg, dev)

	lvcreate := func(size, chunk uint64) (string, error) {
		out, err := exec.Run(t.Context(), g.exec, "lvm", "lvcreate", only, "--test", "-y", "--type", "thin-pool",
			"-n", "pool", "-L", fmt.Sprintf("%db", size), "-c", fmt.Sprintf("%db", chunk), vg)
		return string(out), err
	}
	for _, chunk := range []uint64{64 << 10, 128 << 10, 256 << 10} {
		limit := vgmanager.MaxPoolBytes(chunk) / extent * extent
		if out, err := lvcreate(limit, chunk); err != nil {
			t.Errorf("chunk %d, pool of %d bytes (the limit): %v\n%s", chunk, limit, err, out)
		}
		_, err := lvcreate(limit+extent, chunk)
		if err == nil || !strings.Contains(err.Error(), "cannot address more") {
			t.Errorf("chunk %d, pool of %d bytes (one extent past the limit): %v; want lvm2's refusal", chunk,
				limit+extent, err)
		}
		t.Logf("chunk size %d KiB addresses %d bytes (%.2f TiB) of pool data: lvm2 agrees", chunk>>10,
			limit, float64(limit)/(1<<40))
	}
	pool := uint64(40 << 40)
	chunk := vgmanager.ChunkSizeFor(128<<10, pool)
	if out, err := lvcreate(pool, chunk); err != nil || chunk != 256<<10 {
		t.Errorf("40 TiB pool with the chunk size chosen (%d): %v\n%s", chunk, err, out)
	}
}

// TestGuestThinPoolAutoExtends on real lvm2: a pool of 30% of a disk, with autoExtend from 50% by
// 50% up to 80% of the VG; a thin volume written to about 60% of the pool; the node manager's next
// pass extends the pool by half its size (lvm2's own report then shows it larger and less full),
// the one after it changes nothing.
func TestGuestThinPoolAutoExtends(t *testing.T) {
	disk := guestDisks(t)[6]
	const vg = "autovg"
	g := newGuest(t, []string{vg}, []string{disk})
	g.disks.visible = []string{disk}
	spec := lvmv1alpha1.LVMVolumeGroupSpec{
		DeviceSelector: &lvmv1alpha1.DeviceSelector{Paths: []lvmv1alpha1.DevicePath{lvmv1alpha1.DevicePath(disk)}},
		ThinPoolConfig: &lvmv1alpha1.ThinPoolConfig{
			Name:                       "pool",
			SizePercent:                30,
			OverprovisionRatio:         10,
			ChunkSizeCalculationPolicy: lvmv1alpha1.ChunkSizeCalculationPolicyStatic,
			AutoExtend: &lvmv1alpha1.ThinPoolAutoExtend{
				ThresholdPercent: 50,
				Percent:          50,
				MaxSizePercent:   80,
			},
		},
	}
	in := vgmanager.Input{Name: vg, Spec: spec, NodeName: "guest"}
	if out := g.reconcile(in); out.Status.Status != lvmv1alpha1.VGStatusReady {
		t.Fatalf("status %+v", out.Status)
	}
	pool := func() lvm.LV {
		_, s := g.state(vg)
		lv, _ := s.LV(vg, "pool")
		return lv
	}
	before := pool()
	g.sh("lvm", "lvcreate", "-y", "-n", "data", "-V", "2g", "--thinpool", vg+"/pool")
	mib := before.Size * 6 / 10 >> 20
	g.sh("dd", "if=/dev/urandom", "of=/dev/"+vg+"/data", "bs=1M", fmt.Sprintf("count=%d", mib), "oflag=direct")
	full := pool()
	t.Logf("pool of %d bytes, %d MiB written: data %.2f %%", before.Size, mib, full.DataPercent)
	if full.DataPercent < 50 {
		t.Fatalf("data %.2f %% after writing %d MiB, want 50 %% or more for the test to mean anything",
			full.DataPercent, mib)
	}

	if out := g.reconcile(in); out.Status.Status != lvmv1alpha1.VGStatusReady {
		t.Fatalf("status after the fill %+v", out.Status)
	}
	after := pool()
	want := before.Size + before.Size/2
	t.Logf("after the pass: pool of %d bytes, data %.2f %%", after.Size, after.DataPercent)
	if after.Size < want-(4<<20) || after.Size > want+(4<<20) || after.DataPercent >= full.DataPercent {
		t.Errorf("pool of %d bytes with data %.2f %% after the pass; want about %d bytes and less full than %.2f %%",
			after.Size, after.DataPercent, want, full.DataPercent)
	}
	if g.reconcile(in); pool().Size != after.Size {
		t.Errorf("the next pass extended the pool again without new data: %d bytes", pool().Size)
	}
	g.sh("lvm", "lvremove", "-y", vg+"/data")
	g.teardown(vg, spec, disk)
}
