//go:build guest

package devices_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/devices"
	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// Guest tests run inside a User-mode Linux guest (hack/test-lvm.sh) as root,
// on the disks listed in LVMS_GUEST_DISKS and LVMS_GUEST_RO_DISK. lsblk there
// has no udev: FSTYPE and PARTLABEL are empty, so every signature asserted
// below was found by direct probing.

type guest struct {
	t    *testing.T
	exec *exec.Host
	lvm  *lvm.Client
	host *devices.Host
}

func newGuest(t *testing.T) *guest {
	h := exec.NewHost()
	return &guest{t: t, exec: h, lvm: lvm.New(h), host: devices.NewHost(h, os.DirFS("/"))}
}

func (g *guest) sh(stdin, name string, args ...string) {
	g.t.Helper()
	var err error
	if stdin != "" {
		_, err = exec.RunStdin(g.t.Context(), g.exec, strings.NewReader(stdin), name, args...)
	} else {
		_, err = exec.Run(g.t.Context(), g.exec, name, args...)
	}
	if err != nil {
		g.t.Fatalf("%s: %v", exec.CommandLine(name, args), err)
	}
}

func (g *guest) try(name string, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = exec.Run(ctx, g.exec, name, args...)
}

// signatures probes dev with blkid directly (no package code involved).
func (g *guest) signatures(dev string) string {
	out, err := exec.Run(g.t.Context(), g.exec, "blkid", "-p", "-o", "export", dev)
	if exec.HasExitCode(err, 2) {
		return ""
	}
	if err != nil {
		g.t.Fatalf("blkid %s: %v", dev, err)
	}
	return devices.ParseBlkid(out)["TYPE"] + devices.ParseBlkid(out)["PTTYPE"]
}

func (g *guest) plan(vg string) map[string][]string {
	g.t.Helper()
	s, err := g.lvm.State(g.t.Context())
	if err != nil {
		g.t.Fatal(err)
	}
	pvs := map[string]string{}
	for _, pv := range s.PVs {
		pvs[pv.Name] = pv.VGName
	}
	start := time.Now()
	verdicts, err := g.host.Plan(g.t.Context(), devices.Policy{VGName: vg, PVs: pvs})
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Logf("TIMING plan of %d devices: %v", len(verdicts), time.Since(start).Round(time.Millisecond))
	out := map[string][]string{}
	for _, v := range verdicts {
		out[v.Device.Name] = v.Reasons
		g.t.Logf("%-22s type=%-5s lsblk-fstype=%q probed=%v pt=%q label=%q holders=%v -> %q",
			v.Device.Name, v.Device.Type, v.Device.FSType, v.Facts.Signatures, v.Facts.PartTable, v.Facts.PartLabel,
			v.Facts.Holders, v.Reasons)
	}
	return out
}

func TestGuestDeviceFilterAndWipe(t *testing.T) {
	env := os.Getenv("LVMS_GUEST_DISKS")
	ro := os.Getenv("LVMS_GUEST_RO_DISK")
	if env == "" || ro == "" {
		t.Fatal(
			"LVMS_GUEST_DISKS/LVMS_GUEST_RO_DISK not set: guest tests must run inside the UML guest (hack/test-lvm.sh)",
		)
	}
	d := strings.Split(env, ",")
	if len(d) < 7 {
		t.Fatalf("need 7 disks, have %v", d)
	}
	blank, parted, ext4, foreign, ours, orphan, wipe := d[0], d[1], d[2], d[3], d[4], d[5], d[6]
	g := newGuest(t)
	t.Cleanup(func() {
		g.try("lvm", "vgremove", "-f", "-y", "dfforeign", "dfours", "dfwipe")
		g.try("lvm", append([]string{"pvremove", "-ff", "-y"}, d...)...)
		g.try("wipefs", append([]string{"--all", "--force", parted + "1"}, d...)...)
	})

	// Prepare the disks.
	g.sh("label: gpt\nsize=64MiB, name=boot\n", "sfdisk", "-q", parted)
	g.sh("", "mkfs.ext4", "-q", "-F", ext4)
	g.sh("", "lvm", "vgcreate", "dfforeign", foreign)
	g.sh("", "lvm", "vgcreate", "--addtag", lvm.Tag, "dfours", ours)
	g.sh("", "lvm", "lvcreate", "-y", "-n", "lv1", "-L", "64m", "dfours")
	openEncryptedVolume(g, "/dev/mapper/dfours-lv1", "lvms-dfcrypt")
	g.sh("", "lvm", "pvcreate", orphan)
	g.sh("", "mkfs.ext4", "-q", "-F", wipe)

	if dir := os.Getenv("LVMS_CAPTURE_DIR"); dir != "" {
		raw, err := exec.Run(t.Context(), g.exec, "lsblk", devices.LsblkArgs()...)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "lsblk-guest-prepared.json"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := g.plan("dfnew")
	lvDev := "/dev/mapper/dfours-lv1"
	dm := dmKernelName(t, "dfours-lv1")
	crypt := "/dev/mapper/lvms-dfcrypt"
	want := map[string][]string{
		blank:        nil,
		parted:       {"has children: " + parted + "1", "has a partition table: gpt"},
		parted + "1": {"partition label contains 'boot'"},
		ext4:         {"has a filesystem signature: ext4"},
		foreign:      {"is a PV of another volume group: dfforeign"},
		ours:         {"has children: " + dm, "is a PV of another volume group: dfours"},
		lvDev:        {"is an LVM logical volume (type lvm)", "has children: " + dmKernelName(t, "lvms-dfcrypt")},
		// Not probed: the ext4 on it would add a signature reason.
		crypt:  {"is the dm-crypt mapping of an LVM logical volume (type crypt)"},
		orphan: nil, // an orphan PV may be used
		wipe:   {"has a filesystem signature: ext4"},
		ro:     {"is read-only"},
	}
	for dev, reasons := range want {
		r, ok := got[dev]
		if !ok {
			t.Errorf("%s not listed", dev)
			continue
		}
		if !slices.Equal(r, reasons) {
			t.Errorf("%s: reasons %q, want %q", dev, r, reasons)
		}
	}
	var usable []string
	for dev, r := range got {
		if len(r) == 0 {
			usable = append(usable, dev)
		}
	}
	slices.Sort(usable)
	if !slices.Equal(usable, []string{blank, orphan}) {
		t.Errorf("usable devices = %v, want the blank disk and the orphan PV", usable)
	}

	// For the VG that owns it, a PV already in the VG is fine, LVs included.
	if r := g.plan("dfours")[ours]; len(r) != 0 {
		t.Errorf("own PV rejected: %q", r)
	}

	checkSelector(t, g, blank, ext4)
	testWipe(t, g, wipe, parted)
}

func checkSelector(t *testing.T, g *guest, blank, ext4 string) {
	t.Helper()
	// Selector: everything else is "not in the device selector".
	verdicts, err := g.host.Plan(t.Context(), devices.Policy{VGName: "dfnew", Selector: []string{blank, ext4}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range verdicts {
		inSel := v.Device.Name == blank || v.Device.Name == ext4
		if hasReason(v.Reasons, "is not in the device selector") == inSel {
			t.Errorf("%s: reasons %q with selector", v.Device.Name, v.Reasons)
		}
	}
}

func testWipe(t *testing.T, g *guest, wipe, parted string) {
	ctx := t.Context()
	if err := g.host.Wipe(ctx, wipe, devices.WipeOptIn{}); !errors.Is(err, devices.ErrWipeNotConfirmed) {
		t.Errorf("wipe without opt-in: %v", err)
	}
	if err := g.host.Wipe(
		ctx,
		wipe,
		devices.ForceWipeDevicesAndDestroyAllData(false),
	); !errors.Is(
		err,
		devices.ErrWipeNotConfirmed,
	) {
		t.Errorf("wipe with opt-in false: %v", err)
	}
	if sig := g.signatures(wipe); sig != "ext4" {
		t.Fatalf("signature after refused wipes = %q, want ext4", sig)
	}
	if err := g.host.Wipe(ctx, wipe, devices.ForceWipeDevicesAndDestroyAllData(true)); err != nil {
		t.Fatal(err)
	}
	if sig := g.signatures(wipe); sig != "" {
		t.Errorf("signature after wipe = %q", sig)
	}

	// A disk with active LVs on it: the device-mapper holders go first.
	g.sh("", "lvm", "vgcreate", "dfwipe", wipe)
	g.sh("", "lvm", "lvcreate", "-y", "-n", "pool", "--type", "thin-pool", "-L", "64m", "dfwipe")
	g.sh("", "lvm", "lvcreate", "-y", "-n", "thin", "-V", "128m", "--thinpool", "pool", "dfwipe")
	mnt := t.TempDir()
	g.sh("", "mkfs.ext4", "-q", "/dev/dfwipe/thin")
	g.sh("", "mount", "/dev/dfwipe/thin", mnt)
	if err := g.host.Wipe(
		ctx,
		wipe,
		devices.ForceWipeDevicesAndDestroyAllData(true),
	); !errors.Is(
		err,
		devices.ErrBusy,
	) {
		t.Errorf("wipe under a mounted LV: %v", err)
	}
	g.sh("", "umount", mnt)
	if err := g.host.Wipe(ctx, wipe, devices.ForceWipeDevicesAndDestroyAllData(true)); err != nil {
		t.Fatal(err)
	}
	if sig := g.signatures(wipe); sig != "" {
		t.Errorf("signature after wiping a PV with LVs = %q", sig)
	}
	if r := g.plan("dfnew")[wipe]; len(r) != 0 {
		t.Errorf("wiped disk still rejected: %q", r)
	}

	// A partitioned disk: partitions and table go.
	if err := g.host.Wipe(ctx, parted, devices.ForceWipeDevicesAndDestroyAllData(true)); err != nil {
		t.Fatal(err)
	}
	if r := g.plan("dfnew")[parted]; len(r) != 0 {
		t.Errorf("wiped partitioned disk still rejected: %q", r)
	}
}

func hasReason(reasons []string, r string) bool { return slices.Contains(reasons, r) }

// openEncryptedVolume formats lv as LUKS2 and opens it as mapping with an ext4 inside, as the CSI node
// service stages an encrypted volume (with a cheap key derivation), and closes it at the end of the
// test, before the volume groups are removed.
func openEncryptedVolume(g *guest, lv, mapping string) {
	g.t.Helper()
	const key = "guest key"
	g.sh(key, "cryptsetup", "luksFormat", "--type", "luks2", "--batch-mode", "--pbkdf", "pbkdf2",
		"--pbkdf-force-iterations", "1000", "--key-file=-", lv)
	g.sh(key, "cryptsetup", "open", "--type", "luks2", "--key-file=-", lv, mapping)
	g.t.Cleanup(func() { g.try("cryptsetup", "close", mapping) })
	g.sh("", "mkfs.ext4", "-q", "-F", "/dev/mapper/"+mapping)
}

// dmKernelName finds /dev/dm-N of the device-mapper device name via sysfs
// (without udev, /dev/mapper entries are device nodes, not symlinks).
func dmKernelName(t *testing.T, name string) string {
	t.Helper()
	matches, err := filepath.Glob("/sys/class/block/dm-*/dm/name")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err == nil && strings.TrimSpace(string(b)) == name {
			return "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(m)))
		}
	}
	t.Fatalf("no dm device named %s", name)
	return ""
}
