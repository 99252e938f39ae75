//go:build guest

package lvmd_test

import (
	"os"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// TestGuestActivateLV: what an lvcreate killed midway can leave, an LV lvmd made that is inactive
// (no device node) or active without its /dev/<vg>/<lv> link, is usable again after ActivateLV, and
// ActivateLV on a healthy LV changes nothing.
func TestGuestActivateLV(t *testing.T) {
	g := newGuestEnv(t)
	ctx := t.Context()
	for _, class := range []string{"thick", "thin"} {
		lv, err := g.svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "act-" + class, DeviceClass: class, Size: 8 << 20})
		g.must(err)
		g.must(g.svc.ActivateLV(ctx, lv.Name, class)) // healthy: nothing to do, no error
		_, err = exec.Run(ctx, g.host, "lvm", "lvchange", "-an", "gvg/"+lv.Name)
		g.must(err)
		if _, err := os.Stat(lv.Path); !os.IsNotExist(err) {
			t.Fatalf("%s after lvchange -an: stat %v, want no such file", lv.Path, err)
		}
		g.must(g.svc.ActivateLV(ctx, lv.Name, class))
		if _, err := os.Stat(lv.Path); err != nil {
			t.Fatalf("%s after ActivateLV of an inactive LV: %v", lv.Path, err)
		}
		g.must(os.Remove(lv.Path)) // active, but the link is gone
		g.must(g.svc.ActivateLV(ctx, lv.Name, class))
		if _, err := os.Stat(lv.Path); err != nil {
			t.Fatalf("%s after ActivateLV of an active LV without its link: %v", lv.Path, err)
		}
		t.Logf("%s: %s back after deactivation and after losing its link", class, lv.Path)
	}
}
