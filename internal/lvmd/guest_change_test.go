//go:build guest

package lvmd_test

import (
	"os"
	"strings"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// TestGuestChangeLVReadAhead sets the read-ahead of a thin and a thick LV on real lvm2 while each
// is open, and reads it back from lvm2's metadata (lv_read_ahead), the device (lv_kernel_read_ahead
// and blockdev --getra) and lvmd's next state read.
func TestGuestChangeLVReadAhead(t *testing.T) {
	g := newGuestEnv(t)
	ctx := t.Context()
	for _, class := range []string{"thin", "thick"} {
		lv, err := g.svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "ra-" + class, DeviceClass: class, Size: 64 << 20})
		g.must(err)
		// Held open as a pod's filesystem or block device would hold it.
		f, err := os.OpenFile(lv.Path, os.O_RDWR, 0)
		g.must(err)
		t.Cleanup(func() { _ = f.Close() })
		for _, step := range []struct{ ask, want, kernel string }{
			{"2048", "2048", "2048"},
			{"3", "8", "8"}, // lvm2 rounds up to one page (4 KiB on this guest)
			{"1001", "1000", "1000"},
			{"none", "none", "0"},
			{"auto", "auto", ""}, // the kernel's choice: not checked
		} {
			got, err := g.svc.ChangeLV(
				ctx,
				lvmd.ChangeLVRequest{Name: lv.Name, DeviceClass: class, ReadAhead: step.ask},
			)
			if err != nil || got.ReadAhead != step.want {
				t.Fatalf("%s: ChangeLV(%s) = %+v, %v; want read-ahead %s", class, step.ask, got, err, step.want)
			}
			fields := strings.Fields(g.sh("lvm", "lvs", "--noheadings", "--units", "s", "--nosuffix", "-o",
				"lv_read_ahead,lv_kernel_read_ahead", "gvg/"+lv.Name))
			ra := strings.TrimSpace(g.sh("blockdev", "--getra", lv.Path))
			t.Logf("%s: asked %s: lv_read_ahead %s, lv_kernel_read_ahead %s, blockdev --getra %s", class, step.ask,
				fields[0], fields[1], ra)
			if meta := map[string]string{"none": "0"}[step.want]; meta == "" && fields[0] != step.want ||
				meta != "" && fields[0] != meta {
				t.Errorf("%s: lvm2 keeps read-ahead %s, want %s", class, fields[0], step.want)
			}
			if step.kernel != "" && (fields[1] != step.kernel || ra != step.kernel) {
				t.Errorf("%s: the device's read-ahead is %s (blockdev %s), want %s", class, fields[1], ra, step.kernel)
			}
			// Asking again for what the LV has runs no command and succeeds.
			g.oneExecNone(func() error {
				_, err := g.svc.ChangeLV(
					ctx,
					lvmd.ChangeLVRequest{Name: lv.Name, DeviceClass: class, ReadAhead: step.ask},
				)
				return err
			})
		}
		g.must(g.svc.Refresh(ctx))
		if got, err := g.svc.GetLV(ctx, lv.Name, class); err != nil || got.ReadAhead != "auto" {
			t.Errorf("%s: after a state read: %+v, %v; want read-ahead auto", class, got, err)
		}
	}
}

// oneExecNone runs f, which must succeed without running an lvm command.
func (g *guestEnv) oneExecNone(f func() error) {
	g.t.Helper()
	before := g.host.Counter().Count(lvm.Command)
	g.must(f())
	if n := g.host.Counter().Count(lvm.Command) - before; n != 0 {
		g.t.Errorf("ran lvm %d times, want none", n)
	}
}
