//go:build guest

package thinmeta_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/testing/umlguest"
	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
)

// Guest tests run inside a User-mode Linux guest (hack/test-lvm.sh) as root
// with real lvm2, device-mapper and thin-provisioning-tools, on the disks in
// LVMS_GUEST_DISKS. Each test leaves the disks blank.

const (
	kib = uint64(1) << 10
	mib = uint64(1) << 20
	gib = uint64(1) << 30
)

type guest struct {
	t    *testing.T
	host *exec.Host
	r    *thinmeta.Reader
}

func newGuest(t *testing.T, opts ...thinmeta.Option) *guest {
	t.Helper()
	h := exec.NewHost()
	return &guest{t: t, host: h, r: thinmeta.New(h, opts...)}
}

func guestDisks(t *testing.T, n int) []string {
	t.Helper()
	return umlguest.Disks(t, 0, n)
}

// sh runs a setup command that must succeed.
func (g *guest) sh(name string, args ...string) string {
	g.t.Helper()
	out, err := exec.Run(g.t.Context(), g.host, name, args...)
	if err != nil {
		g.t.Fatalf("%s: %v", exec.CommandLine(name, args), err)
	}
	return string(out)
}

func (g *guest) try(name string, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = exec.Run(ctx, g.host, name, args...)
}

// vg creates VG name on disks and registers a teardown leaving them blank.
func (g *guest) vg(name string, disks ...string) {
	g.t.Helper()
	g.t.Cleanup(func() {
		g.try("lvm", "vgremove", "-ff", "-y", name)
		g.try("lvm", append([]string{"pvremove", "-ff", "-y"}, disks...)...)
		g.try("wipefs", append([]string{"--all", "--force"}, disks...)...)
	})
	g.sh("lvm", append([]string{"vgcreate", "-y", name}, disks...)...)
}

func (g *guest) pool(vg, name, size string, chunk uint64) thinmeta.Pool {
	g.t.Helper()
	g.sh("lvm", "lvcreate", "-y", "--type", "thin-pool", "-L", size, "-c", fmt.Sprintf("%db", chunk),
		"-n", name, vg)
	return thinmeta.Pool{VG: vg, Name: name}
}

func (g *guest) thin(vg, pool, name, size string) {
	g.t.Helper()
	g.sh("lvm", "lvcreate", "-y", "-V", size, "-T", vg+"/"+pool, "-n", name)
}

// snapshot takes an active thin snapshot of vg/origin.
func (g *guest) snapshot(vg, origin, name string) {
	g.t.Helper()
	g.sh("lvm", "lvcreate", "-y", "-s", "--setactivationskip", "n", "-n", name, vg+"/"+origin)
}

// write writes ranges of random data with O_DIRECT dd (4 KiB aligned).
func (g *guest) write(dev string, rs ...thinmeta.Range) {
	g.t.Helper()
	for _, r := range rs {
		g.sh("dd", "if=/dev/urandom", "of="+dev, "bs=4096", fmt.Sprintf("seek=%d", r.Offset/4096),
			fmt.Sprintf("count=%d", r.Length/4096), "oflag=direct", "status=none")
	}
}

func (g *guest) lookup(vg string, names ...string) []thinmeta.Thin {
	g.t.Helper()
	ts, err := g.r.Lookup(g.t.Context(), vg, names...)
	if err != nil {
		g.t.Fatal(err)
	}
	return ts
}

// notHeld fails the test when pool p holds a metadata snapshot.
func (g *guest) notHeld(p thinmeta.Pool, after string) {
	g.t.Helper()
	held, err := g.r.Held(g.t.Context(), p)
	if err != nil {
		g.t.Fatalf("after %s: %v", after, err)
	}
	if held {
		g.t.Errorf("after %s: pool %s still holds a metadata snapshot", after, p)
	}
}

func collect(f func(func(thinmeta.Range) error) error) ([]thinmeta.Range, error) {
	var out []thinmeta.Range
	err := f(func(r thinmeta.Range) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// chunked rounds ranges out to whole chunks, sorts and merges them.
func chunked(chunk uint64, rs ...thinmeta.Range) []thinmeta.Range {
	var out []thinmeta.Range
	for _, r := range rs {
		start := r.Offset / chunk * chunk
		end := (r.End() + chunk - 1) / chunk * chunk
		out = append(out, thinmeta.Range{Offset: start, Length: end - start})
	}
	slices.SortFunc(out, func(a, b thinmeta.Range) int { return int(a.Offset>>12) - int(b.Offset>>12) })
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 && r.Offset <= merged[n-1].End() {
			merged[n-1].Length = max(merged[n-1].End(), r.End()) - merged[n-1].Offset
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("error = %v, want %v", err, want)
	}
}
