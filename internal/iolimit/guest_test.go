//go:build guest

package iolimit_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	lvmsexec "github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/iolimit"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/testing/umlguest"
)

// Guest tests run inside a User-mode Linux guest (hack/test-lvm.sh) as root with real lvm2,
// device-mapper and cgroup v2: an LV published as the kubelet publishes it (a filesystem mount and a
// block bind mount under a kubelet directory), a pod cgroup as the kubelet makes it, and dd in that
// cgroup against the LV's device-mapper device.

const vgName = "giolimit"

// cgroupRoot mounts cgroup v2 (unless /sys/fs/cgroup is it) and enables the io controller down to
// kubepods/besteffort, as the kubelet's cgroup driver does; it returns the root.
func cgroupRoot(t *testing.T) string {
	t.Helper()
	root := "/sys/fs/cgroup"
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
		root = t.TempDir()
		must(t, unix.Mount("cgroup2", root, "cgroup2", 0, ""))
		t.Cleanup(func() { _ = unix.Unmount(root, unix.MNT_DETACH) })
	}
	ctrls, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	must(t, err)
	if !strings.Contains(string(ctrls), "io") {
		t.Fatalf("cgroup v2 controllers %q: no io controller in this kernel", strings.TrimSpace(string(ctrls)))
	}
	dir := root
	for _, sub := range []string{"kubepods", "besteffort"} {
		must(t, os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+io"), 0))
		dir = filepath.Join(dir, sub)
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+io"), 0))
	return root
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.CommandContext(t.Context(), name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// podCgroup makes the cgroup of pod uid and removes it at the end.
func podCgroup(t *testing.T, root, uid string) string {
	t.Helper()
	cg := filepath.Join(root, "kubepods", "besteffort", "pod"+uid)
	must(t, os.Mkdir(cg, 0o755))
	t.Cleanup(func() { _ = os.Remove(cg) })
	return cg
}

// ddIn runs dd in cgroup cg (writing count MiB with O_DIRECT to of) and returns how long it took.
func ddIn(t *testing.T, cg, of string, count int) time.Duration {
	t.Helper()
	start := time.Now()
	script := fmt.Sprintf("echo $$ > %s/cgroup.procs && exec dd if=/dev/zero of=%s bs=1M count=%d oflag=direct",
		cg, of, count)
	run(t, "sh", "-c", script)
	return time.Since(start)
}

func TestGuestIOLimits(t *testing.T) {
	ctx := t.Context()
	disk := umlguest.Disks(t, 0, 1)[0]
	h := lvmsexec.NewHost()
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = lvmsexec.Run(cctx, h, "lvm", "vgremove", "-f", "-y", vgName)
		_, _ = lvmsexec.Run(cctx, h, "lvm", "pvremove", "-ff", "-y", disk)
		_, _ = lvmsexec.Run(cctx, h, "wipefs", "--all", "--force", disk)
	})
	l := lvm.New(h)
	must(t, l.CreateVG(ctx, vgName, []string{disk}))
	vg, err := l.OwnedVG(ctx, vgName)
	must(t, err)
	for _, name := range []string{"fs", "blk"} {
		must(t, l.CreateLV(ctx, vg, lvm.LVOptions{Name: name, Size: 64 << 20}))
	}
	fsDev, blkDev := "/dev/"+vgName+"/fs", "/dev/"+vgName+"/blk"
	run(t, "mkfs.ext4", "-q", fsDev)

	// Published as the kubelet publishes: pod a has the filesystem volume pvc-fs, pod b the block
	// volume pvc-blk.
	kubelet := t.TempDir()
	fsTarget := filepath.Join(kubelet, "pods", "aaaa-1", "volumes", "kubernetes.io~csi", "pvc-fs", "mount")
	blkTarget := filepath.Join(
		kubelet,
		"plugins",
		"kubernetes.io",
		"csi",
		"volumeDevices",
		"publish",
		"pvc-blk",
		"bbbb-2",
	)
	must(t, os.MkdirAll(fsTarget, 0o755))
	must(t, os.MkdirAll(filepath.Dir(blkTarget), 0o755))
	must(t, os.WriteFile(blkTarget, nil, 0o600))
	run(t, "mount", fsDev, fsTarget)
	t.Cleanup(func() { _ = unix.Unmount(fsTarget, 0) })
	run(t, "mount", "--bind", blkDev, blkTarget)
	t.Cleanup(func() { _ = unix.Unmount(blkTarget, 0) })

	root := cgroupRoot(t)
	cgA, cgB := podCgroup(t, root, "aaaa-1"), podCgroup(t, root, "bbbb-2")
	host := &iolimit.Host{CgroupRoot: root, KubeletDir: kubelet}

	uses, err := host.Uses("pvc-fs")
	must(t, err)
	want := rdev(t, fsDev)
	if len(uses) != 1 || uses[0].PodUID != "aaaa-1" || uses[0].Device != want {
		t.Fatalf("Uses(pvc-fs) = %+v, want pod aaaa-1 on %s (the LV's device-mapper device)", uses, want)
	}
	blk, err := host.UseOf(blkTarget)
	must(t, err)
	if blk.PodUID != "bbbb-2" || blk.Device != rdev(t, blkDev) {
		t.Fatalf("UseOf(block target) = %+v, want pod bbbb-2 on %s", blk, rdev(t, blkDev))
	}

	const limit, mib = 2 << 20, 8
	unlimited := ddIn(t, cgA, filepath.Join(fsTarget, "before"), mib)
	must(t, host.Apply(uses[0], iolimit.Limits{WriteBPS: limit}))
	must(t, host.Apply(blk, iolimit.Limits{WriteBPS: limit}))
	for cg, d := range map[string]iolimit.Device{cgA: uses[0].Device, cgB: blk.Device} {
		got, err := iolimit.Get(cg, d)
		if err != nil || got != (iolimit.Limits{WriteBPS: limit}) {
			t.Fatalf("io.max of %s for %s: %+v, %v", cg, d, got, err)
		}
	}
	// A cap can only make dd slower, never faster, whatever the machine's load: 8 MiB at 2 MiB/s
	// take 4 s (the throttle lets at most a slice's worth more through).
	minimum := time.Duration(0.8 * float64(mib<<20) / limit * float64(time.Second))
	for name, d := range map[string]time.Duration{
		"filesystem": ddIn(t, cgA, filepath.Join(fsTarget, "after"), mib),
		"block":      ddIn(t, cgB, blkTarget, mib),
	} {
		t.Logf("%s volume: %d MiB in %v capped at %d MiB/s (uncapped: %v)", name, mib, d.Round(time.Millisecond),
			limit>>20, unlimited.Round(time.Millisecond))
		if d < minimum {
			t.Errorf("%s volume: %d MiB written in %v under a cap of %d MiB/s, want at least %v",
				name, mib, d, limit>>20, minimum)
		}
	}

	// Removed: the entry goes.
	must(t, host.Apply(uses[0], iolimit.Limits{}))
	if got, err := iolimit.Get(cgA, uses[0].Device); err != nil || !got.IsZero() {
		t.Errorf("io.max after removal: %+v, %v", got, err)
	}
}

func rdev(t *testing.T, p string) iolimit.Device {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Stat(p, &st))
	return iolimit.Device{Major: unix.Major(st.Rdev), Minor: unix.Minor(st.Rdev)}
}
