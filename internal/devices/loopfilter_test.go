package devices_test

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/devices"
	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

const kubeletBacking = "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/pvc-1/pod-1\n"

// loopHost is a host with the kubelet's loop0 (three names under /dev/disk), an admin's loop1 and a
// detached loop2.
func loopHost() fstest.MapFS {
	link := func(target string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink}
	}
	return fstest.MapFS{
		"sys/class/block/loop0/loop/backing_file": {Data: []byte(kubeletBacking)},
		"sys/class/block/loop1/loop/backing_file": {Data: []byte("/srv/disk.img\n")},
		"sys/class/block/loop2/dev":               {Data: []byte("7:2\n")},
		"dev/disk/by-loop-ref/kubelet\\x2fpvc-1":  link("../../loop0"),
		"dev/disk/by-id/lvm-pv-uuid-abc":          link("../../loop0"),
		"dev/disk/by-uuid/0a5f":                   link("../../loop0"),
		"dev/disk/by-id/lvm-pv-uuid-admin":        link("../../loop1"),
		"dev/disk/by-id/dm-name-vg-lv":            link("../../dm-0"),
		"proc/1/root/etc/lvm/lvm.conf":            {Data: []byte("devices {}\n"), ModTime: time.Unix(100, 0)},
		"proc/1/root/etc/lvm/lvmlocal.conf":       {Data: []byte(""), ModTime: time.Unix(100, 0)},
	}
}

// ourRejects is the filter of loopHost's kubelet names, in front of the host's rules.
const ourRejects = `"r|^/dev/disk/by-id/lvm-pv-uuid-abc$|", "r|^/dev/disk/by-loop-ref/kubelet.x2fpvc-1$|", ` +
	`"r|^/dev/disk/by-uuid/0a5f$|", "r|^/dev/loop0$|"`

var lvmconfigArgs = []string{"lvmconfig", "--type", "current", "devices/global_filter"}

// lvs runs `lvm lvs vg` as the product runs a read: through an lvm client with the filter's
// configuration.
func lvs(t *testing.T, e exec.Executor, filter *devices.LoopFilter) error {
	t.Helper()
	return lvm.New(e).WithConfig(filter.Config).Read(t.Context(), nil, "lvs", "vg")
}

func TestLoopFilterRejectsEveryNameOfTheKubeletsLoops(t *testing.T) {
	tests := []struct {
		name      string
		lvmconfig exectest.Response
		want      string
	}{
		{
			"no host filter", exectest.Fail(5, "  Configuration node devices/global_filter not found"),
			"devices { global_filter = [ " + ourRejects + " ] }",
		},
		{
			"host list kept behind ours", exectest.OK(`global_filter=["a|/dev/sd.*|","r|x\"y|"]` + "\n"),
			"devices { global_filter = [ " + ourRejects + `, "a|/dev/sd.*|","r|x\"y|" ] }`,
		},
		{
			"host single string kept", exectest.OK(`global_filter="a|.*|"` + "\n"),
			"devices { global_filter = [ " + ourRejects + `, "a|.*|" ] }`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A read carries the filter alone; a change the archive bound and the filter, in one
			// --config.
			read := []string{"lvs", "--config", tt.want, "vg"}
			archived := lvm.CommandArgs("pvcreate", "/dev/sdb")
			change := append([]string{"pvcreate", "--config", archived[2] + " " + tt.want}, archived[3:]...)
			f := exectest.New().On(tt.lvmconfig, "lvm", lvmconfigArgs...).
				On(exectest.OK(""), "lvm", read...).On(exectest.OK(""), "lvm", change...)
			filter := devices.NewLoopFilter(f, loopHost(), "proc/1/root/etc/lvm")
			if err := lvs(t, f, filter); err != nil {
				t.Fatal(err)
			}
			if err := lvm.New(f).WithConfig(filter.Config).CreatePVs(t.Context(), "/dev/sdb"); err != nil {
				t.Fatal(err)
			}
			want := []string{
				exec.CommandLine("lvm", lvmconfigArgs), exec.CommandLine("lvm", read), exec.CommandLine("lvm", change),
			}
			if d := exectest.Diff(f, want...); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestLoopFilterReadsTheHostFilterAgainOnlyWhenLVMConfChanges(t *testing.T) {
	host := loopHost()
	f := exectest.New().On(exectest.OK(`global_filter="a|.*|"`), "lvm", lvmconfigArgs...)
	f.Handler = func(exectest.Call) exectest.Response { return exectest.OK("") }
	filter := devices.NewLoopFilter(f, host, "proc/1/root/etc/lvm")
	for range 3 {
		if err := lvs(t, f, filter); err != nil {
			t.Fatal(err)
		}
	}
	if n := countArgs(f, "lvmconfig"); n != 1 {
		t.Fatalf("lvmconfig ran %d times for three commands, want once: %q", n, f.Lines())
	}
	host["proc/1/root/etc/lvm/lvmlocal.conf"] = &fstest.MapFile{Data: []byte("x"), ModTime: time.Unix(200, 0)}
	if err := lvs(t, f, filter); err != nil {
		t.Fatal(err)
	}
	if n := countArgs(f, "lvmconfig"); n != 2 {
		t.Errorf("lvmconfig ran %d times after lvmlocal.conf changed, want 2", n)
	}
}

// Without a kubelet loop device the filter adds nothing: a read has no --config, a change only the
// archive bound; lvmconfig does not run.
func TestLoopFilterAddsNothingWithoutKubeletLoops(t *testing.T) {
	noKubelet := loopHost()
	delete(noKubelet, "sys/class/block/loop0/loop/backing_file")
	read := []string{"lvs", "vg"}
	change := lvm.CommandArgs("pvcreate", "/dev/sdb")
	f := exectest.New().On(exectest.OK(""), "lvm", read...).On(exectest.OK(""), "lvm", change...)
	filter := devices.NewLoopFilter(f, noKubelet, "etc/lvm")
	if err := lvs(t, f, filter); err != nil {
		t.Fatal(err)
	}
	if err := lvm.New(f).WithConfig(filter.Config).CreatePVs(t.Context(), "/dev/sdb"); err != nil {
		t.Fatal(err)
	}
	if d := exectest.Diff(f, exec.CommandLine("lvm", read), exec.CommandLine("lvm", change)); d != "" {
		t.Error(d)
	}
}

func TestLoopFilterFailsWhenTheHostFilterCannotBeRead(t *testing.T) {
	f := exectest.New().On(exectest.Fail(3, "  Parse error at byte 12"), "lvm", lvmconfigArgs...)
	err := lvs(t, f, devices.NewLoopFilter(f, loopHost(), "etc/lvm"))
	if err == nil || !strings.Contains(err.Error(), "host's devices/global_filter") || exec.ExitCode(err) != 3 {
		t.Fatalf("err = %v, want the lvmconfig failure", err)
	}
	if d := exectest.Diff(f, exec.CommandLine("lvm", lvmconfigArgs)); d != "" {
		t.Errorf("the lvm command ran without the host's filter: %s", d)
	}
}

func TestParseGlobalFilter(t *testing.T) {
	tests := []struct{ out, want, err string }{
		{`global_filter=["a|.*|"]` + "\n", `"a|.*|"`, ""},
		{`global_filter=["a|/dev/sd.*|","r|x\"y|"]`, `"a|/dev/sd.*|","r|x\"y|"`, ""},
		{`global_filter="r|^/dev/drbd|"`, `"r|^/dev/drbd|"`, ""},
		{`global_filter=[]`, ``, ""},
		{`filter=["a|.*|"]`, "", "want global_filter="},
		{`global_filter=["a|.*|"`, "", "want a string or a list"},
		{`global_filter=3`, "", "want a string or a list"},
		{`global_filter="`, "", "want a string or a list"},
	}
	for _, tt := range tests {
		got, err := devices.ParseGlobalFilter(tt.out)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err = %v, want %q", tt.out, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: got %q, %v; want %q", tt.out, got, err, tt.want)
		}
	}
}

func FuzzParseGlobalFilter(f *testing.F) {
	for _, s := range []string{`global_filter=["a|.*|"]`, `global_filter="a|x|"`, `global_filter=[]`, "", "global_filter="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		rules, err := devices.ParseGlobalFilter(out)
		if err != nil {
			return
		}
		if !strings.Contains(out, rules) {
			t.Fatalf("%q gave rules %q that it does not hold", out, rules)
		}
	})
}

func countArgs(f *exectest.Fake, sub string) int {
	n := 0
	for _, c := range f.Calls() {
		if len(c.Args) > 0 && c.Args[0] == sub {
			n++
		}
	}
	return n
}
