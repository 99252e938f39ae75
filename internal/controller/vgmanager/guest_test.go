//go:build guest

package vgmanager_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
	"github.com/lvm-operator/lvm-operator/internal/devices"
	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// Guest tests run as root inside a User-mode Linux guest (hack/test-lvm.sh) on real lvm2, on the
// disks of LVMS_GUEST_DISKS. The node manager is used exactly as the reconciler uses it; only the
// inventory is narrowed to the disks a test owns, so that each test sees "a node with these disks".

type guest struct {
	t     *testing.T
	exec  *exec.Host
	lvm   *lvm.Client
	disks *visibleDisks
	mgr   *vgmanager.NodeManager
}

// visibleDisks hides every block device but the listed ones from the real inventory.
type visibleDisks struct {
	host    *devices.Host
	visible []string
}

func (v *visibleDisks) Plan(ctx context.Context, p devices.Policy) ([]devices.Verdict, error) {
	all, err := v.host.Plan(ctx, p)
	return slices.DeleteFunc(
		all,
		func(x devices.Verdict) bool { return !slices.Contains(v.visible, x.Device.Name) },
	), err
}

func (v *visibleDisks) Wipe(ctx context.Context, dev string, opt devices.WipeOptIn) error {
	return v.host.Wipe(ctx, dev, opt)
}

func guestDisks(t *testing.T) []string {
	env := os.Getenv("LVMS_GUEST_DISKS")
	if env == "" {
		t.Fatal("LVMS_GUEST_DISKS not set: guest tests must run inside the UML guest (hack/test-lvm.sh)")
	}
	d := strings.Split(env, ",")
	if len(d) < 7 {
		t.Fatalf("need 7 disks, have %v", d)
	}
	return d
}

func newGuest(t *testing.T, vgs []string, disks []string) *guest {
	h := exec.NewHost()
	g := &guest{t: t, exec: h, lvm: lvm.New(h), disks: &visibleDisks{host: devices.NewHost(h, os.DirFS("/"))}}
	g.mgr = vgmanager.NewNodeManager(g.disks, g.lvm, nil)
	t.Cleanup(func() {
		for _, vg := range vgs {
			g.try("lvm", "vgremove", "-f", "-y", vg)
		}
		g.try("lvm", append([]string{"pvremove", "-ff", "-y"}, disks...)...)
		g.try("wipefs", append([]string{"--all", "--force"}, disks...)...)
	})
	return g
}

func (g *guest) sh(name string, args ...string) string {
	g.t.Helper()
	out, err := exec.Run(g.t.Context(), g.exec, name, args...)
	if err != nil {
		g.t.Fatalf("%s: %v", exec.CommandLine(name, args), err)
	}
	return string(out)
}

func (g *guest) try(name string, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = exec.Run(ctx, g.exec, name, args...)
}

// blkid probes dev directly: "" when blank.
func (g *guest) blkid(dev string) string {
	out, err := exec.Run(g.t.Context(), g.exec, "blkid", "-p", "-o", "export", dev)
	if exec.HasExitCode(err, 2) {
		return ""
	}
	if err != nil {
		g.t.Fatalf("blkid %s: %v", dev, err)
	}
	kv := devices.ParseBlkid(out)
	return kv["TYPE"] + kv["PTTYPE"]
}

func (g *guest) reconcile(in vgmanager.Input) vgmanager.Outcome {
	g.t.Helper()
	start := time.Now()
	out, err := g.mgr.Reconcile(ctrl.LoggerInto(g.t.Context(), testr.New(g.t)), in, vgmanager.Hooks{})
	g.t.Logf("TIMING reconcile %s (dryRun=%t wiped=%t): %v -> %s %q devices=%v", in.Name, in.DryRun, in.AlreadyWiped,
		time.Since(start).Round(time.Millisecond), out.Status.Status, out.Status.Reason, out.Status.Devices)
	for _, e := range out.Status.Excluded {
		g.t.Logf("  excluded %s: %q", e.Name, e.Reasons)
	}
	if err != nil {
		g.t.Fatalf("reconcile %s: %v", in.Name, err)
	}
	return out
}

func (g *guest) state(vg string) (lvm.VG, *lvm.State) {
	g.t.Helper()
	s, err := g.lvm.State(g.t.Context())
	if err != nil {
		g.t.Fatal(err)
	}
	v, ok := s.VG(vg)
	if !ok {
		g.t.Fatalf("VG %s does not exist", vg)
	}
	return v, s
}

// assertPoolShare checks that the thin pool's data is pct% of the VG (within one extent).
func (g *guest) assertPoolShare(vgName, pool string, pct uint64) {
	g.t.Helper()
	vg, s := g.state(vgName)
	lv, ok := s.LV(vgName, pool)
	if !ok || lv.SegType() != "thin-pool" {
		g.t.Fatalf("thin pool %s/%s missing: %+v", vgName, pool, lv)
	}
	// lvm2's -l <pct>%FREE covers data, metadata and the metadata spare; so does the re-extend.
	data, meta := lv.Size/vg.ExtentSize, (lv.MetadataSize+vg.ExtentSize-1)/vg.ExtentSize
	got, want := data+2*meta, pct*vg.ExtentCount/100
	g.t.Logf(
		"VG %s: %d extents of %d bytes; pool %s: %d data + %d metadata (+ %d spare) = %d extents, %d%% of the VG = %d",
		vgName,
		vg.ExtentCount,
		vg.ExtentSize,
		pool,
		data,
		meta,
		meta,
		got,
		pct,
		want,
	)
	if got+1 < want || got > want+1 {
		g.t.Fatalf("thin pool takes %d extents, want %d%% of %d = %d (±1)", got, pct, vg.ExtentCount, want)
	}
}

func sortedEqual(got, want []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want)))
}

func excludedReasons(st lvmv1alpha1.VGStatus, dev string) string {
	for _, e := range st.Excluded {
		if e.Name == dev {
			return strings.Join(e.Reasons, "; ")
		}
	}
	return ""
}

// TestGuestThinClassLifecycle: the sample device class on a node with two blank disks and one with
// ext4, growth by a new disk (Dynamic), refusal to delete while a user LV exists, and teardown.
func TestGuestThinClassLifecycle(t *testing.T) {
	d := guestDisks(t)
	a, b, withFS, later := d[0], d[1], d[2], d[3]
	const vg = "gvg1"
	g := newGuest(t, []string{vg}, d[:4])
	g.sh("mkfs.ext4", "-q", "-F", withFS)
	spec := lvmv1alpha1.LVMVolumeGroupSpec{
		Default:               true,
		DeviceDiscoveryPolicy: lvmv1alpha1.DeviceDiscoveryPolicyDynamic,
		ThinPoolConfig: &lvmv1alpha1.ThinPoolConfig{Name: "thin-pool-1", SizePercent: 90, OverprovisionRatio: 10,
			ChunkSizeCalculationPolicy: lvmv1alpha1.ChunkSizeCalculationPolicyStatic},
	}
	in := vgmanager.Input{Name: vg, Spec: spec, NodeName: "guest"}

	g.disks.visible = []string{a, b, withFS}
	out := g.reconcile(in)
	if out.Status.Status != lvmv1alpha1.VGStatusReady || !sortedEqual(out.Status.Devices, []string{a, b}) {
		t.Fatalf("status %+v, want Ready on %s, %s", out.Status, a, b)
	}
	if r := excludedReasons(out.Status, withFS); !strings.Contains(r, "ext4") {
		t.Fatalf("%s excluded with %q, want a reason naming ext4", withFS, r)
	}
	v, s := g.state(vg)
	if !v.Owned() || len(s.PVsOf(vg)) != 2 {
		t.Fatalf("VG %+v, PVs %+v: want tagged @lvms on 2 PVs", v, s.PVsOf(vg))
	}
	g.assertPoolShare(vg, "thin-pool-1", 90)
	if pool, _ := s.LV(vg, "thin-pool-1"); pool.Segments[0].ChunkSize != 128<<10 {
		t.Fatalf("chunk size %d, want 128Ki", pool.Segments[0].ChunkSize)
	}
	if pool, _ := s.LV(vg, "thin-pool-1"); !pool.Attr.Zero {
		t.Fatalf("thin pool attr %q: new chunks are not zeroed, so a volume could read a previous tenant's data",
			pool.Attr.String())
	}
	cfg, err := vgmanager.LVMDConfig([]lvmv1alpha1.LVMVolumeGroup{{Spec: spec}}, s)
	if err != nil || len(cfg.DeviceClasses) != 0 {
		t.Fatalf("lvmd config for an unnamed VG: %+v, %v", cfg, err) // the object name is the VG name
	}
	obj := lvmv1alpha1.LVMVolumeGroup{Spec: spec}
	obj.Name = vg
	cfg, err = vgmanager.LVMDConfig([]lvmv1alpha1.LVMVolumeGroup{obj}, s)
	if err != nil || len(cfg.DeviceClasses) != 1 || cfg.DeviceClasses[0].ThinPool.OverprovisionRatio != 10 {
		t.Fatalf("lvmd config %+v, %v", cfg, err)
	}

	// Idempotent: nothing changes on a second pass.
	before := g.sh("lvm", lvm.ReportArgs()...)
	if out := g.reconcile(in); out.Status.Status != lvmv1alpha1.VGStatusReady {
		t.Fatalf("second reconcile: %+v", out.Status)
	}
	if after := g.sh("lvm", lvm.ReportArgs()...); after != before {
		t.Fatalf("second reconcile changed the LVM state:\nbefore %s\nafter  %s", before, after)
	}

	// A pool that stopped zeroing new chunks (by hand here; pools made before lvms zeroed) gets it back.
	g.sh("lvm", "lvchange", "--zero", "n", vg+"/thin-pool-1")
	if out := g.reconcile(in); out.Status.Status != lvmv1alpha1.VGStatusReady {
		t.Fatalf("reconcile of a pool without zeroing: %+v", out.Status)
	}
	if _, s := g.state(vg); !func() bool { p, _ := s.LV(vg, "thin-pool-1"); return p.Attr.Zero }() {
		t.Fatal("the manager did not turn zeroing of new chunks back on")
	}

	// A blank disk appears: Dynamic adds it and the pool follows to 90% of the grown VG.
	g.disks.visible = append(g.disks.visible, later)
	out = g.reconcile(in)
	if out.Status.Status != lvmv1alpha1.VGStatusReady || !sortedEqual(out.Status.Devices, []string{a, b, later}) {
		t.Fatalf("after a new disk: %+v", out.Status)
	}
	g.assertPoolShare(vg, "thin-pool-1", 90)

	// A user LV blocks the teardown.
	g.sh("lvm", "lvcreate", "-y", "-n", "user", "-L", "32m", vg)
	_, err = g.mgr.Teardown(t.Context(), vg, spec, false)
	if !errors.Is(err, vgmanager.ErrVolumesExist) || !strings.Contains(err.Error(), "user") {
		t.Fatalf("teardown with a user LV: %v, want ErrVolumesExist naming it", err)
	}
	g.state(vg) // still there
	g.sh("lvm", "lvremove", "-y", vg+"/user")
	g.teardown(vg, spec, a, b, later)
}

// teardown removes the VG and checks that nothing of it is left: no VG, no PV label on its disks.
func (g *guest) teardown(vg string, spec lvmv1alpha1.LVMVolumeGroupSpec, disks ...string) {
	g.t.Helper()
	start := time.Now()
	done, err := g.mgr.Teardown(ctrl.LoggerInto(g.t.Context(), testr.New(g.t)), vg, spec, false)
	g.t.Logf("TIMING teardown: %v", time.Since(start).Round(time.Millisecond))
	if err != nil || !done {
		g.t.Fatalf("teardown: %t, %v", done, err)
	}
	s, err := g.lvm.State(g.t.Context())
	if err != nil {
		g.t.Fatal(err)
	}
	if _, ok := s.VG(vg); ok {
		g.t.Fatalf("VG %s still exists", vg)
	}
	for _, dev := range disks {
		if sig := g.blkid(dev); sig != "" {
			g.t.Errorf("%s still has signature %q after teardown, want none (no LVM2_member)", dev, sig)
		}
	}
}

// TestGuestForceWipeOnce: the triple opt-in wipes a disk with a filesystem once; with the wiped
// flag, a disk with a new signature is left alone.
func TestGuestForceWipeOnce(t *testing.T) {
	d := guestDisks(t)
	blank, withFS, later := d[4], d[5], d[6]
	const vg = "gvg2"
	g := newGuest(t, []string{vg}, d[4:7])
	g.disks.visible = []string{blank, withFS, later}
	g.sh("mkfs.ext4", "-q", "-F", withFS)
	spec := lvmv1alpha1.LVMVolumeGroupSpec{
		DeviceDiscoveryPolicy: lvmv1alpha1.DeviceDiscoveryPolicyDynamic,
		DeviceSelector: &lvmv1alpha1.DeviceSelector{
			Paths: []lvmv1alpha1.DevicePath{
				lvmv1alpha1.DevicePath(blank),
				lvmv1alpha1.DevicePath(withFS),
			},
			ForceWipeDevicesAndDestroyAllData: ptr.To(true),
		},
	}
	in := vgmanager.Input{Name: vg, Spec: spec, NodeName: "guest"}
	out := g.reconcile(in)
	if !out.Wiped || out.Status.Status != lvmv1alpha1.VGStatusReady ||
		!sortedEqual(out.Status.Devices, []string{blank, withFS}) {
		t.Fatalf("first reconcile: wiped=%t %+v", out.Wiped, out.Status)
	}
	if sig := g.blkid(withFS); sig != "LVM2_member" {
		t.Fatalf("%s has %q after the wipe and vgcreate, want LVM2_member", withFS, sig)
	}

	// The wipe happened (the caller recorded it). A new disk with a filesystem is added to the
	// paths: it must survive, excluded with its reason.
	g.sh("mkfs.ext4", "-q", "-F", later)
	in.AlreadyWiped = true
	in.Spec.DeviceSelector.Paths = append(in.Spec.DeviceSelector.Paths, lvmv1alpha1.DevicePath(later))
	out = g.reconcile(in)
	if out.Wiped {
		t.Fatal("wiped again although the node had wiped already")
	}
	if sig := g.blkid(later); sig != "ext4" {
		t.Fatalf("%s has %q, want its ext4 signature to survive", later, sig)
	}
	if r := excludedReasons(out.Status, later); !strings.Contains(r, "ext4") || !strings.Contains(r, "already wiped") {
		t.Fatalf("%s excluded with %q", later, r)
	}
	if out.Status.Status != lvmv1alpha1.VGStatusDegraded || !strings.Contains(out.Status.Reason, later) {
		t.Fatalf("status %+v, want Degraded naming %s (a required path is unusable)", out.Status, later)
	}
	g.teardown(vg, spec, blank, withFS)
}

// TestGuestDryRunChangesNothing: with dry-run the plan is reported and the disks stay as they were.
func TestGuestDryRunChangesNothing(t *testing.T) {
	d := guestDisks(t)
	blank, withFS := d[4], d[5]
	const vg = "gvg3"
	g := newGuest(t, []string{vg}, d[4:6])
	g.disks.visible = []string{blank, withFS}
	g.sh("mkfs.ext4", "-q", "-F", withFS)
	spec := lvmv1alpha1.LVMVolumeGroupSpec{
		DeviceSelector: &lvmv1alpha1.DeviceSelector{
			Paths: []lvmv1alpha1.DevicePath{
				lvmv1alpha1.DevicePath(blank),
				lvmv1alpha1.DevicePath(withFS),
			},
			ForceWipeDevicesAndDestroyAllData: ptr.To(true),
		},
		ThinPoolConfig: &lvmv1alpha1.ThinPoolConfig{Name: "tp", SizePercent: 90, OverprovisionRatio: 10},
	}
	snapshot := func() string {
		report := g.sh("lvm", lvm.ReportArgs()...)
		return report + "|" + g.blkid(blank) + "|" + g.blkid(withFS)
	}
	before := snapshot()
	out := g.reconcile(vgmanager.Input{Name: vg, Spec: spec, NodeName: "guest", DryRun: true})
	after := snapshot()
	if before != after {
		t.Fatalf("dry-run changed the disks:\nbefore %s\nafter  %s", before, after)
	}
	if out.Wiped || out.Status.Status != lvmv1alpha1.VGStatusProgressing {
		t.Fatalf("dry-run: wiped=%t %+v", out.Wiped, out.Status)
	}
	for _, want := range []string{"dry-run", "nothing was changed", "wipe " + withFS, "create volume group " + vg, "create thin pool tp"} {
		if !strings.Contains(out.Status.Reason, want) {
			t.Errorf("dry-run reason %q lacks %q", out.Status.Reason, want)
		}
	}
	if !bytes.Contains([]byte(excludedReasons(out.Status, withFS)), []byte("will be wiped")) {
		t.Errorf("%s excluded with %q, want 'will be wiped'", withFS, excludedReasons(out.Status, withFS))
	}
}
