//go:build guest

package logicalvolume

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
	"github.com/lvm-operator/lvm-operator/internal/testing/umlguest"
)

// Guest tests run inside a User-mode Linux guest (hack/test-lvm.sh) as root with real lvm2 and
// device-mapper, on the disks in LVMS_GUEST_DISKS.

// TestGuestUnusableLVReplaced: a node agent killed while lvcreate makes a thin LV can leave the LV in
// the VG metadata before the pool made its thin device, so that `lvchange -ay` fails with "reload
// ioctl ... No data available" for ever (seen in make e2e's TestAgentRestartMidProvisioning). The
// test makes that state by cancelling lvmd's CreateLV (which kills lvcreate) after a growing delay
// until lvm2 shows it; a restarted agent's reconciler then removes the LV and creates a usable one.
func TestGuestUnusableLVReplaced(t *testing.T) {
	h, svc := guestLVMD(t)
	ctx := t.Context()
	name := makeUnactivatableLV(t, h, svc)

	restarted := newGuestService(t, h)
	obj := newLV("a", class("thin"), size(64<<20))
	obj.UID = types.UID(name)
	cl := newClient(t, nil, obj)
	r, err := New(Options{Client: cl, APIReader: cl, NodeName: node, LVM: restarted})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, svc: restarted, client: cl, r: r}
	e.mustReconcile("a")
	e.mustReconcile("a")
	got := e.get("a")
	checkHealthy(t, got)
	if got.Status.VolumeID != name {
		t.Fatalf("status.volumeID %q, want %q", got.Status.VolumeID, name)
	}
	path := "/dev/gvg/" + name
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("after the reconcile: %v", err)
	}
	out, err := exec.Run(ctx, h, "lvm", "lvs", "--noheadings", "-o", "lv_name,lv_attr", "gvg")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the reconcile, %s exists; lvs:\n%s", path, out)
	if strings.Count(string(out), name) != 1 {
		t.Errorf("want exactly one LV %s", name)
	}
}

// makeUnactivatableLV kills lvmd's lvcreate of a thin LV after 100 ms, 125 ms, ... until lvm2 lists
// the LV and cannot activate it, and returns its name. Every other outcome (no LV yet, an active
// LV, an LV that activates) is removed and the next delay tried; once three delays in a row let
// lvcreate finish, the window is behind. The window is narrow and moves with the host's load (on
// 2026-11-27 a CI run beside the e2e lane found none of 196 delays), so the sweep is made up to
// three times, each time 8 ms later.
func makeUnactivatableLV(t *testing.T, h *exec.Host, svc *lvmd.Service) string {
	i := 0
	for pass := range 3 {
		finished := 0
		start := 100*time.Millisecond + time.Duration(pass)*8*time.Millisecond
		for d := start; d < 5*time.Second && finished < 3; d += 25 * time.Millisecond {
			name, done := killCreate(t, h, svc, fmt.Sprintf("killed-%d", i), d)
			if name != "" {
				return name
			}
			i++
			finished++
			if !done {
				finished = 0
			}
		}
	}
	t.Fatal("no delay up to 5 s, in three sweeps, left an LV that cannot be activated")
	return ""
}

// killCreate creates thin LV name and kills its lvcreate after d. It returns name if that left an
// LV that cannot be activated; otherwise it removes whatever was left and reports whether
// lvcreate had finished before the kill.
func killCreate(t *testing.T, h *exec.Host, svc *lvmd.Service, name string, d time.Duration) (string, bool) {
	ctx := t.Context()
	cctx, cancel := context.WithTimeout(ctx, d)
	_, err := svc.CreateLV(cctx, lvmd.CreateLVRequest{Name: name, DeviceClass: "thin", Size: 64 << 20})
	cancel()
	attr, lerr := exec.Run(ctx, h, "lvm", "lvs", "--noheadings", "-o", "lv_attr", "gvg/"+name)
	if lerr != nil {
		return "", false // lvcreate was killed before it wrote the LV
	}
	if err != nil && !strings.Contains(string(attr), "-a-") { // not finished, and inactive
		if _, aerr := exec.Run(ctx, h, "lvm", "lvchange", "-ay", "-K", "gvg/"+name); aerr != nil {
			t.Logf("lvcreate killed after %v left %s (attr %s) that cannot be activated: %v",
				d, name, strings.TrimSpace(string(attr)), aerr)
			return name, false
		}
	}
	if _, err := exec.Run(ctx, h, "lvm", "lvremove", "-f", "-y", "gvg/"+name); err != nil {
		t.Fatal(err)
	}
	return "", err == nil
}

// guestLVMD makes VG gvg on two guest disks with a 1 GiB thin pool, a thin LV that keeps the pool
// active (as volumes in use do on a node), and an lvmd service with class thin on it.
func guestLVMD(t *testing.T) (*exec.Host, *lvmd.Service) {
	t.Helper()
	disks := umlguest.Disks(t, 0, 2)
	h := exec.NewHost()
	c := lvm.New(h)
	ctx := t.Context()
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = exec.Run(cctx, h, "lvm", "vgremove", "-f", "-y", "gvg")
		_, _ = exec.Run(cctx, h, "lvm", append([]string{"pvremove", "-ff", "-y"}, disks...)...)
	})
	must(t, c.CreateVG(ctx, "gvg", disks))
	vg, err := c.OwnedVG(ctx, "gvg")
	must(t, err)
	must(t, c.CreateThinPool(ctx, vg, lvm.ThinPoolOptions{Name: "pool", Size: 1 << 30}))
	svc := newGuestService(t, h)
	_, err = svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "in-use", DeviceClass: "thin", Size: 64 << 20})
	must(t, err)
	return h, svc
}

// newGuestService is a new lvmd (as a restarted agent starts one) with class thin on gvg/pool.
func newGuestService(t *testing.T, h *exec.Host) *lvmd.Service {
	t.Helper()
	classes, err := lvmd.NewDeviceClassManager(&lvmd.Config{DeviceClasses: []lvmd.DeviceClass{{
		Name: "thin", VolumeGroup: "gvg", Type: lvmd.TypeThin, Default: true,
		ThinPool: &lvmd.ThinPoolConfig{Name: "pool", OverprovisionRatio: 10},
	}}})
	must(t, err)
	svc, err := lvmd.NewService(lvmd.Options{Executor: h, Classes: classes})
	must(t, err)
	must(t, svc.Refresh(t.Context()))
	return svc
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
