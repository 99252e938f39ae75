package uml

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDiskDevice(t *testing.T) {
	for i, want := range map[int]string{0: "/dev/ubda", 1: "/dev/ubdb", 7: "/dev/ubdh", 15: "/dev/ubdp"} {
		if got := DiskDevice(i); got != want {
			t.Errorf("DiskDevice(%d) = %q, want %q", i, got, want)
		}
	}
}

func TestKernelArgs(t *testing.T) {
	cfg := bootConfig{
		memoryMiB: 256,
		initPath:  "/repo/hack/uml/guest-init.sh",
		runDir:    "/tmp/lvms-uml-1",
		umid:      "lvms-1",
		umlDir:    "/tmp/lvms-uml-1/uml",
		disks:     []diskFile{{path: "/tmp/lvms-uml-1/disk0.img"}, {path: "/tmp/lvms-uml-1/disk1.img", readOnly: true}},
		serial:    []serialArg{{index: 1, fd: 3}},
		extraArgs: []string{"loglevel=7"},
	}
	got, err := kernelArgs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"mem=256M", "root=/dev/root", "rootfstype=hostfs", "rootflags=/", "ro",
		"init=/repo/hack/uml/guest-init.sh",
		"ubd0=/tmp/lvms-uml-1/disk0.img", "ubd1r=/tmp/lvms-uml-1/disk1.img",
		"umid=lvms-1", "uml_dir=/tmp/lvms-uml-1/uml",
		"con0=fd:0,fd:1", "con=null", "ssl=null", "ssl1=fd:3",
		"quiet", "loglevel=7", "LVMS_UML_RUNDIR=/tmp/lvms-uml-1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("kernelArgs =\n%q\nwant\n%q", got, want)
	}

	cfg.showKernel = true
	got, err = kernelArgs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got, "quiet") {
		t.Errorf("showKernel: args still hold quiet: %q", got)
	}
}

func TestKernelArgsRejects(t *testing.T) {
	base := bootConfig{memoryMiB: 1, initPath: "/i", runDir: "/r", umid: "u", umlDir: "/u"}
	tests := map[string]func(c *bootConfig){
		"space in run dir":  func(c *bootConfig) { c.runDir = "/tmp/a b" },
		"comma in init":     func(c *bootConfig) { c.initPath = "/a,b" },
		"empty umid":        func(c *bootConfig) { c.umid = "" },
		"colon in disk":     func(c *bootConfig) { c.disks = []diskFile{{path: "/a:b"}} },
		"too many disks":    func(c *bootConfig) { c.disks = make([]diskFile, maxDisks+1) },
		"bad serial number": func(c *bootConfig) { c.serial = []serialArg{{index: 64, fd: 3}} },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			c := base
			mutate(&c)
			if _, err := kernelArgs(c); err == nil {
				t.Error("kernelArgs accepted it")
			}
		})
	}
}

// TestSpecScriptRoundTrip sources the generated spec with the host's sh, as the guest init
// does, and checks the arguments, env and calls survive quoting.
func TestSpecScriptRoundTrip(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("no sh: %v", err)
	}
	args := []string{"/bin/prog", "it's", "two words", `$HOME`, "back\\slash", "new\nline", ""}
	spec, err := specScript(runSpec{
		command:    args,
		env:        map[string]string{"B": "x y", "A": "'q'"},
		workDir:    "/some dir",
		sharedDirs: []string{"/tmp/build/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	specPath := filepath.Join(dir, "spec.sh")
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	// Print each call and argument NUL-separated to compare exactly.
	script := `share() { printf 'share=%s\0' "$1"; }
workdir() { printf 'workdir=%s\0' "$1"; }
. "$1"
for a in "$@"; do printf '%s\0' "$a"; done`
	out, err := exec.Command(sh, "-c", script, "sh", specPath).Output()
	if err != nil {
		t.Fatalf("sourcing spec: %v\n%s", err, spec)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	want := append([]string{"share=/tmp/build", "workdir=/some dir", "/usr/bin/env", "-i", "A='q'", "B=x y"}, args...)
	if !slices.Equal(got, want) {
		t.Errorf("spec round trip =\n%q\nwant\n%q\nspec:\n%s", got, want, spec)
	}
}

func TestSpecScriptRejects(t *testing.T) {
	tests := map[string]runSpec{
		"no command":        {},
		"empty command":     {command: []string{""}},
		"equals in command": {command: []string{"/a=b"}},
		"bad env name":      {command: []string{"/x"}, env: map[string]string{"A-B": "1"}},
		"relative share":    {command: []string{"/x"}, sharedDirs: []string{"rel"}},
		"NUL in arg":        {command: []string{"/x", "a\x00b"}},
	}
	for name, s := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := specScript(s); err == nil {
				t.Error("specScript accepted it")
			}
		})
	}
}

func TestGuestEnv(t *testing.T) {
	env := guestEnv(map[string]string{"PATH": "/x", "K": "v"}, "/out")
	if env["PATH"] != "/x" || env["K"] != "v" || env["LVMS_GUEST"] != "1" || env["LVMS_GUEST_OUT"] != "/out" ||
		env["HOME"] != "/root" {
		t.Errorf("guestEnv = %v", env)
	}
}

func TestStandardLayout(t *testing.T) {
	disks := StandardDisks()
	if len(disks) != 8 {
		t.Fatalf("StandardDisks has %d disks, want 8", len(disks))
	}
	for i, d := range disks[:7] {
		if d.Size != 2<<30 || d.ReadOnly {
			t.Errorf("disk %d = %+v, want 2 GiB read-write", i, d)
		}
	}
	if d := disks[7]; d.Size != 1<<30 || !d.ReadOnly {
		t.Errorf("disk 7 = %+v, want 1 GiB read-only", d)
	}
	env := StandardEnv()
	if got, want := env["LVMS_GUEST_DISKS"], "/dev/ubda,/dev/ubdb,/dev/ubdc,/dev/ubdd,/dev/ubde,/dev/ubdf,/dev/ubdg"; got != want {
		t.Errorf("LVMS_GUEST_DISKS = %q, want %q", got, want)
	}
	if env["LVMS_GUEST_RO_DISK"] != "/dev/ubdh" || env["LVMS_GUEST"] != "1" ||
		!strings.Contains(env["PATH"], "/usr/sbin") {
		t.Errorf("StandardEnv = %v", env)
	}
}

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"512":  512,
		"4K":   4 << 10,
		"512M": 512 << 20,
		"2G":   2 << 30,
		"1GiB": 1 << 30,
		"1GB":  1 << 30,
		"1T":   1 << 40,
	}
	for in, want := range good {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "G", "-1G", "0", "1X", "1.5G"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted it", in)
		}
	}
}
