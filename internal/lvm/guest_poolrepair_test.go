//go:build guest

package lvm_test

import (
	"strings"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// TestGuestThinLVInAPoolLeftHalfActivated builds the state an lvcreate killed while it activated
// an inactive thin pool leaves (seen on the e2e cluster): the pool's _tmeta and _tdata active, the
// pool not. Plain lvm2 then refuses every thin lvcreate in the pool; CreateThinLV deactivates the
// leftovers and creates the LV.
func TestGuestThinLVInAPoolLeftHalfActivated(t *testing.T) {
	g := newGuest(t)
	vg := g.vgOn("leftover", guestDisks(t, 1)...)
	g.must(g.lvm.CreateThinPool(t.Context(), vg, lvm.ThinPoolOptions{Name: "pool", Size: 256 << 20}))

	// What the killed lvcreate left: the components' device-mapper devices with lvm2's UUIDs and
	// tables, without the pool's.
	type dev struct{ name, uuid, table string }
	var comps []dev
	for _, c := range []string{"leftover-pool_tmeta", "leftover-pool_tdata"} {
		comps = append(comps, dev{c, strings.TrimSpace(g.sh("dmsetup", "info", "-c", "--noheadings", "-o", "uuid", c)),
			strings.TrimSpace(g.sh("dmsetup", "table", c))})
	}
	g.sh("lvm", "lvchange", "-an", "leftover/pool")
	for _, c := range comps {
		g.sh("dmsetup", "create", c.name, "--uuid", c.uuid, "--table", c.table)
	}
	attrs := g.sh("lvm", "lvs", "-a", "--noheadings", "-o", "lv_name,lv_attr", "leftover")
	out, err := execRun(
		g,
		"lvm",
		"lvcreate",
		"-y",
		"--type",
		"thin",
		"-V",
		"64m",
		"--thinpool",
		"pool",
		"-n",
		"plain",
		"leftover",
	)
	if err == nil || !strings.Contains(err.Error(), "is prohibited while logical volume leftover/pool_t") {
		t.Fatalf("plain lvcreate in the half-activated pool: %v %s (want lvm2's refusal; attrs:\n%s)", err, out, attrs)
	}

	if err := g.lvm.CreateThinLV(
		t.Context(),
		g.vg("leftover"),
		lvm.ThinLVOptions{Name: "lv", VirtualSize: 64 << 20, Pool: "pool"},
	); err != nil {
		t.Fatalf("CreateThinLV in the half-activated pool: %v (attrs before:\n%s)", err, attrs)
	}
	lv := g.lv("leftover", "lv")
	if lv.Attr.State != lvm.StateActive {
		t.Errorf("the new thin LV is not active: %+v", lv)
	}
	t.Logf(
		"before:\n%safter:\n%s",
		attrs,
		g.sh("lvm", "lvs", "-a", "--noheadings", "-o", "lv_name,lv_attr", "leftover"),
	)
}
