//go:build guest

package lvm_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/testing/umlguest"
)

// Guest tests run inside a User-mode Linux guest (hack/test-lvm.sh) as root
// with real lvm2 and device-mapper, on the disks listed in LVMS_GUEST_DISKS.
// Tests run one after the other and each leaves the disks blank.

func guestDisks(t *testing.T, n int) []string {
	t.Helper()
	return umlguest.Disks(t, 0, n)
}

type guest struct {
	t    *testing.T
	host *exec.Host
	lvm  *lvm.Client
}

func newGuest(t *testing.T) *guest {
	t.Helper()
	h := exec.NewHost()
	return &guest{t: t, host: h, lvm: lvm.New(h)}
}

// sh runs a host command that must succeed (setup and checks outside the
// package under test).
func (g *guest) sh(name string, args ...string) string {
	g.t.Helper()
	out, err := exec.Run(g.t.Context(), g.host, name, args...)
	if err != nil {
		g.t.Fatalf("%s: %v", exec.CommandLine(name, args), err)
	}
	return string(out)
}

// execRun runs a command that may fail.
func execRun(g *guest, name string, args ...string) ([]byte, error) {
	return exec.Run(g.t.Context(), g.host, name, args...)
}

// try runs a cleanup command, ignoring failure.
func (g *guest) try(name string, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = exec.Run(ctx, g.host, name, args...)
}

// vgOn creates VG name tagged lvms on disks through the package under test
// and registers a forced teardown that leaves the disks blank.
func (g *guest) vgOn(name string, disks ...string) lvm.VG {
	g.t.Helper()
	g.cleanupDisks(name, disks...)
	if err := g.lvm.CreateVG(g.t.Context(), name, disks); err != nil {
		g.t.Fatal(err)
	}
	return g.vg(name)
}

func (g *guest) cleanupDisks(vg string, disks ...string) {
	g.t.Cleanup(func() {
		g.try("lvm", "vgremove", "-f", "-y", vg)
		g.try("lvm", append([]string{"pvremove", "-ff", "-y"}, disks...)...)
		g.try("wipefs", append([]string{"--all", "--force"}, disks...)...)
	})
}

// state reads the LVM state.
func (g *guest) state() *lvm.State {
	g.t.Helper()
	s, err := g.lvm.State(g.t.Context())
	if err != nil {
		g.t.Fatal(err)
	}
	return s
}

func (g *guest) vg(name string) lvm.VG {
	g.t.Helper()
	vg, ok := g.state().VG(name)
	if !ok {
		g.t.Fatalf("VG %s not in state", name)
	}
	return vg
}

func (g *guest) lv(vg, name string) lvm.LV {
	g.t.Helper()
	lv, ok := g.state().LV(vg, name)
	if !ok {
		g.t.Fatalf("LV %s/%s not in state", vg, name)
	}
	return lv
}

// must fails the test on err.
func (g *guest) must(err error) {
	g.t.Helper()
	if err != nil {
		g.t.Fatal(err)
	}
}

// timed runs f, logs its duration under label and returns it.
func timed(t *testing.T, label string, f func() error) time.Duration {
	t.Helper()
	start := time.Now()
	if err := f(); err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	d := time.Since(start)
	t.Logf("TIMING %s: %v", label, d.Round(time.Millisecond))
	return d
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

const (
	mib = uint64(1) << 20
	gib = uint64(1) << 30
)
