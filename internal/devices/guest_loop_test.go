//go:build guest

package devices_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/lvm-operator/lvm-operator/internal/devices"
	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// TestGuestKubeletLoopDevicesAreHiddenFromLVM attaches a loop device to an LV the way the kubelet
// publishes a Block volume, writes a tenant's VG inside it, and checks that lvm2 run by an lvm
// client with NewLoopFilter's configuration no longer sees that VG, with and without a
// global_filter of the host's own (which accepts every name, so the udev link of the loop device
// has to be rejected too), while a loop device of the admin's stays a PV.
func TestGuestKubeletLoopDevicesAreHiddenFromLVM(t *testing.T) {
	disks := strings.Split(os.Getenv("LVMS_GUEST_DISKS"), ",")
	if disks[0] == "" {
		t.Fatal("LVMS_GUEST_DISKS not set: guest tests must run inside the UML guest (hack/test-lvm.sh)")
	}
	disk := disks[0]
	g := newGuest(t)
	var loops []string
	link := "/dev/disk/by-id/lvm-pv-uuid-lftenant"
	t.Cleanup(func() {
		g.try("lvm", "vgremove", "-f", "-y", "lftenant", "lfadmin")
		for _, l := range loops {
			g.try("losetup", "-d", l)
		}
		g.try("lvm", "vgremove", "-f", "-y", "lfours")
		g.try("lvm", "pvremove", "-ff", "-y", disk)
		g.try("wipefs", "--all", "--force", disk)
		_ = os.Remove(link)
	})

	g.sh("", "lvm", "vgcreate", "lfours", disk)
	g.sh("", "lvm", "lvcreate", "-y", "-n", "vol", "-L", "64m", "lfours")
	kubeletLoop := attachLikeKubelet(g, "/dev/lfours/vol")
	loops = append(loops, kubeletLoop)
	g.sh("", "lvm", "vgcreate", "lftenant", kubeletLoop)
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../"+filepath.Base(kubeletLoop), link); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(t.TempDir(), "admin.img")
	g.sh("", "truncate", "-s", "64M", img)
	adminLoop := g.losetup(img)
	loops = append(loops, adminLoop)
	g.sh("", "lvm", "vgcreate", "lfadmin", adminLoop)

	acceptAll := lvmConfDirWith(t, `global_filter = [ "a|.*|" ]`)
	for _, tc := range []struct {
		name, confDir string
		env           []string
	}{
		{"no global_filter on the host", "/etc/lvm", nil},
		{"the host's global_filter accepts all", acceptAll, []string{"LVM_SYSTEM_DIR=" + acceptAll}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := exec.NewHost(exec.WithEnv(tc.env...))
			if vgs := vgNames(t, lvm.New(host)); !slices.Contains(vgs, "lftenant") {
				t.Fatalf("without the filter lvm2 shows %v: the tenant's VG should be there", vgs)
			}
			filter := devices.NewLoopFilter(host, os.DirFS("/"), strings.TrimPrefix(tc.confDir, "/"))
			vgs := vgNames(t, lvm.New(host).WithConfig(filter.Config))
			if slices.Contains(vgs, "lftenant") || !slices.Contains(vgs, "lfours") || !slices.Contains(vgs, "lfadmin") {
				t.Errorf("through the filter lvm2 shows %v, want lfours and lfadmin without lftenant", vgs)
			}
		})
	}
}

// attachLikeKubelet makes a block device node of dev under a directory shaped like the kubelet's
// publish path of a Block volume and attaches a loop device to it, as the kubelet does.
func attachLikeKubelet(g *guest, dev string) string {
	g.t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		g.t.Fatal(err)
	}
	dir := filepath.Join(g.t.TempDir(), "plugins/kubernetes.io/csi/volumeDevices/publish/pvc-1")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		g.t.Fatal(err)
	}
	node := filepath.Join(dir, "pod-1")
	if err := unix.Mknod(node, unix.S_IFBLK|0o600, int(st.Rdev)); err != nil {
		g.t.Fatal(err)
	}
	return g.losetup(node)
}

func (g *guest) losetup(file string) string {
	g.t.Helper()
	out, err := exec.Run(g.t.Context(), g.exec, "losetup", "-f", "--show", file)
	if err != nil {
		g.t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// lvmConfDirWith copies the guest's lvm.conf into a new directory with line added to its devices
// section.
func lvmConfDirWith(t *testing.T, line string) string {
	t.Helper()
	b, err := os.ReadFile("/etc/lvm/lvm.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.Replace(string(b), "devices {", "devices {\n\t"+line, 1)
	if conf == string(b) {
		t.Fatalf("no devices section in the guest's lvm.conf:\n%s", b)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lvm.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func vgNames(t *testing.T, c *lvm.Client) []string {
	t.Helper()
	s, err := c.State(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, vg := range s.VGs {
		names = append(names, vg.Name)
	}
	return names
}
