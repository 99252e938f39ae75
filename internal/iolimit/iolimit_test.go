package iolimit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLine(t *testing.T) {
	for _, tc := range []struct {
		l    Limits
		want string
	}{
		{Limits{}, "253:3 rbps=max wbps=max riops=max wiops=max"},
		{Limits{WriteBPS: 1 << 20}, "253:3 rbps=max wbps=1048576 riops=max wiops=max"},
		{Limits{1, 2, 3, 4}, "253:3 rbps=1 wbps=2 riops=3 wiops=4"},
	} {
		if got := Line(Device{253, 3}, tc.l); got != tc.want {
			t.Errorf("Line(%+v) = %q, want %q", tc.l, got, tc.want)
		}
	}
}

func TestParseIOMax(t *testing.T) {
	got, err := ParseIOMax("8:0 rbps=max wbps=1048576 riops=max wiops=100\n253:3 rbps=5 wbps=max riops=7 wiops=max\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[Device]Limits{{8, 0}: {WriteBPS: 1 << 20, WriteIOPS: 100}, {253, 3}: {ReadBPS: 5, ReadIOPS: 7}}
	if len(got) != len(want) || got[Device{8, 0}] != want[Device{8, 0}] || got[Device{253, 3}] != want[Device{253, 3}] {
		t.Errorf("ParseIOMax = %v, want %v", got, want)
	}
	for _, bad := range []string{"x rbps=1", "8:0 rbps", "8:0 rbps=-1", "8 rbps=1"} {
		if _, err := ParseIOMax(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseIOMax(%q) error %v, want ErrMalformed", bad, err)
		}
	}
}

func FuzzParseIOMax(f *testing.F) {
	f.Add("8:0 rbps=max wbps=1048576 riops=max wiops=100\n")
	f.Add("253:3 rbps=1 wbps=2 riops=3 wiops=4 newkey=5\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		all, err := ParseIOMax(s)
		if err != nil {
			return
		}
		// What parses is written back as lines the kernel reads, and parses the same again.
		var b strings.Builder
		for d, l := range all {
			b.WriteString(Line(d, l) + "\n")
		}
		again, err := ParseIOMax(b.String())
		if err != nil || len(again) != len(all) {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
		for d, l := range all {
			if again[d] != l {
				t.Fatalf("round trip of %q: %v became %v", s, l, again[d])
			}
		}
	})
}

func TestParseTarget(t *testing.T) {
	const k = "/var/lib/kubelet"
	for _, tc := range []struct {
		path string
		want Target
		ok   bool
	}{
		{k + "/pods/1a2b/volumes/kubernetes.io~csi/pvc-1/mount", Target{Volume: "pvc-1", PodUID: "1a2b"}, true},
		{k + "/plugins/kubernetes.io/csi/volumeDevices/publish/pvc-2/3c4d", Target{"pvc-2", "3c4d", true}, true},
		{k + "/pods/1a2b/volumes/kubernetes.io~empty-dir/x/mount", Target{}, false},
		{k + "/pods/1a2b/volumes/kubernetes.io~csi/pvc-1/mount/sub", Target{}, false},
		{"/mnt/pods/1a2b/volumes/kubernetes.io~csi/pvc-1/mount", Target{}, false},
		{k + "/plugins/kubernetes.io/csi/pvc-2/globalmount", Target{}, false},
	} {
		got, err := ParseTarget(k, tc.path)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseTarget(%s) = %+v, %v; want %+v ok=%v", tc.path, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrNotTarget) {
			t.Errorf("ParseTarget(%s) error %v, want ErrNotTarget", tc.path, err)
		}
	}
}

// mountinfo lines: a CSI filesystem publish of pvc-1 for two pods (its source is not a device node
// here, so the mount's own device number is used), one of another volume, and unrelated mounts.
const mountInfo = `22 1 0:21 / / rw - ext4 /dev/root rw
30 22 253:3 / /var/lib/kubelet/pods/aaaa-1/volumes/kubernetes.io~csi/pvc-1/mount rw - ext4 /nonexistent/dm-3 rw
31 22 253:3 / /var/lib/kubelet/pods/bbbb-2/volumes/kubernetes.io~csi/pvc-1/mount rw - ext4 /nonexistent/dm-3 rw
32 22 253:4 / /var/lib/kubelet/pods/cccc-3/volumes/kubernetes.io~csi/pvc-9/mount rw - xfs /nonexistent/dm-4 rw
33 22 0:50 / /var/lib/kubelet/pods/aaaa-1/volumes/kubernetes.io~projected/token rw - tmpfs tmpfs rw
`

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestUses(t *testing.T) {
	dir := t.TempDir()
	h := &Host{MountInfo: filepath.Join(dir, "mountinfo")}
	writeFile(t, h.MountInfo, mountInfo)
	uses, err := h.Uses("pvc-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(uses) != 2 || uses[0].PodUID != "aaaa-1" || uses[1].PodUID != "bbbb-2" ||
		uses[0].Device != (Device{253, 3}) || uses[1].Device != (Device{253, 3}) {
		t.Errorf("Uses(pvc-1) = %+v, want pods aaaa-1 and bbbb-2 on 253:3", uses)
	}
	if uses, err := h.Uses("pvc-none"); err != nil || len(uses) != 0 {
		t.Errorf("Uses(pvc-none) = %+v, %v; want none", uses, err)
	}
	u, err := h.UseOf("/var/lib/kubelet/pods/cccc-3/volumes/kubernetes.io~csi/pvc-9/mount/")
	if err != nil || u.PodUID != "cccc-3" || u.Device != (Device{253, 4}) {
		t.Errorf("UseOf = %+v, %v; want pod cccc-3 on 253:4", u, err)
	}
	if _, err := h.UseOf("/var/lib/kubelet/pods/dddd/volumes/kubernetes.io~csi/pvc-9/mount"); err == nil {
		t.Error("UseOf an unmounted target succeeded")
	}
}

func TestPodCgroupAndSet(t *testing.T) {
	root := t.TempDir()
	plain := filepath.Join(root, "kubepods", "burstable", "pod1234-ab")
	systemd := filepath.Join(root, "kubepods.slice", "kubepods-besteffort.slice",
		"kubepods-besteffort-pod5678_cd.slice")
	deep := filepath.Join(root, "a", "b", "c", "d", "e", "pod9999")
	for _, d := range []string{plain, systemd, deep} {
		writeFile(t, filepath.Join(d, "io.max"), "")
	}
	h := &Host{CgroupRoot: root}
	for uid, want := range map[string]string{"1234-ab": plain, "5678-cd": systemd} {
		got, err := h.PodCgroup(uid)
		if err != nil || got != want {
			t.Errorf("PodCgroup(%s) = %s, %v; want %s", uid, got, err, want)
		}
	}
	for _, uid := range []string{"9999", "0000"} { // below the depth searched; absent
		if _, err := h.PodCgroup(uid); !errors.Is(err, ErrNoCgroup) {
			t.Errorf("PodCgroup(%s) error %v, want ErrNoCgroup", uid, err)
		}
	}
	d := Device{253, 3}
	if err := h.Apply(Use{PodUID: "1234-ab", Device: d}, Limits{WriteBPS: 4096}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(
		filepath.Join(plain, "io.max"),
	); string(
		b,
	) != "253:3 rbps=max wbps=4096 riops=max wiops=max" {
		t.Errorf("io.max = %q", b)
	}
	if l, err := Get(plain, d); err != nil || l != (Limits{WriteBPS: 4096}) {
		t.Errorf("Get = %+v, %v", l, err)
	}
	noIO := filepath.Join(root, "kubepods", "podffff")
	if err := os.MkdirAll(noIO, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(Use{PodUID: "ffff", Device: d}, Limits{ReadIOPS: 1}); !errors.Is(err, ErrNoIOController) {
		t.Errorf("Apply to a cgroup without io.max: %v, want ErrNoIOController", err)
	}
}
