package uml

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// maxDisks is the number of ubd devices UML supports.
const maxDisks = 16

// guestPath is the PATH every guest command starts with.
const guestPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// DiskDevice returns the guest device path of disk i: /dev/ubda for 0, /dev/ubdb for 1, ...
func DiskDevice(i int) string {
	return "/dev/ubd" + string(rune('a'+i))
}

// bootConfig is what the kernel command line is built from.
type bootConfig struct {
	memoryMiB  int
	initPath   string
	runDir     string
	umid       string
	umlDir     string
	disks      []diskFile
	serial     []serialArg
	extraArgs  []string
	showKernel bool
}

type diskFile struct {
	path     string
	readOnly bool
}

type serialArg struct {
	index int
	fd    int
}

// kernelArgs builds the linux.uml command line (without the program name).
func kernelArgs(c bootConfig) ([]string, error) {
	if len(c.disks) > maxDisks {
		return nil, fmt.Errorf("%d disks requested, UML supports at most %d", len(c.disks), maxDisks)
	}
	for _, v := range []string{c.initPath, c.runDir, c.umlDir, c.umid} {
		if v == "" || strings.ContainsAny(v, " \t\n,") {
			return nil, fmt.Errorf("kernel command line value %q is empty or holds a space or comma", v)
		}
	}
	args := []string{
		fmt.Sprintf("mem=%dM", c.memoryMiB),
		"root=/dev/root", "rootfstype=hostfs", "rootflags=/", "ro",
		"init=" + c.initPath,
	}
	for i, d := range c.disks {
		if strings.ContainsAny(d.path, " \t\n,:") {
			return nil, fmt.Errorf("disk file %q holds a space, comma or colon", d.path)
		}
		flags := ""
		if d.readOnly {
			flags = "r"
		}
		args = append(args, fmt.Sprintf("ubd%d%s=%s", i, flags, d.path))
	}
	args = append(args,
		"umid="+c.umid, "uml_dir="+c.umlDir,
		"con0=fd:0,fd:1", "con=null", "ssl=null",
	)
	for _, s := range c.serial {
		if s.index < 0 || s.index > 63 {
			return nil, fmt.Errorf("serial line index %d out of range", s.index)
		}
		args = append(args, fmt.Sprintf("ssl%d=fd:%d", s.index, s.fd))
	}
	if !c.showKernel {
		args = append(args, "quiet")
	}
	args = append(args, c.extraArgs...)
	// Unknown key=value parameters without a dot reach init as environment variables.
	args = append(args, "LVMS_UML_RUNDIR="+c.runDir)
	return args, nil
}

// runSpec is what the guest init reads from <run dir>/spec.sh.
type runSpec struct {
	command    []string
	env        map[string]string
	workDir    string
	sharedDirs []string
}

// specScript renders the run spec as the shell fragment guest-init.sh sources: calls to its
// `share` and `workdir` functions, then `set --` with the command run under `env -i`.
func specScript(s runSpec) (string, error) {
	if len(s.command) == 0 || s.command[0] == "" {
		return "", errors.New("no command given")
	}
	if strings.Contains(s.command[0], "=") {
		return "", fmt.Errorf("command %q must not contain '=' (env would take it for a variable)", s.command[0])
	}
	var b strings.Builder
	b.WriteString("# Written by dev/internal/uml; sourced by hack/uml/guest-init.sh.\n")
	for _, d := range s.sharedDirs {
		if !filepath.IsAbs(d) || strings.ContainsAny(d, ",\n") {
			return "", fmt.Errorf("shared dir %q must be absolute and hold no comma or newline", d)
		}
		fmt.Fprintf(&b, "share %s\n", shellQuote(filepath.Clean(d)))
	}
	wd := s.workDir
	if wd == "" {
		wd = "/"
	}
	fmt.Fprintf(&b, "workdir %s\n", shellQuote(wd))
	words := []string{"/usr/bin/env", "-i"}
	for _, k := range slices.Sorted(maps.Keys(s.env)) {
		if !envNameRE.MatchString(k) {
			return "", fmt.Errorf("invalid environment variable name %q", k)
		}
		words = append(words, k+"="+s.env[k])
	}
	words = append(words, s.command...)
	b.WriteString("set --")
	for _, w := range words {
		if strings.ContainsRune(w, 0) {
			return "", fmt.Errorf("argument %q holds a NUL byte", w)
		}
		b.WriteString(" \\\n\t")
		b.WriteString(shellQuote(w))
	}
	b.WriteString("\n")
	return b.String(), nil
}

// guestEnv merges the base environment with the caller's (the caller wins).
func guestEnv(user map[string]string, outDir string) map[string]string {
	env := map[string]string{
		"PATH":           guestPath,
		"HOME":           "/root",
		"LVMS_GUEST":     "1",
		"LVMS_GUEST_OUT": outDir,
	}
	maps.Copy(env, user)
	return env
}

// shellQuote quotes s for POSIX sh with single quotes.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ParseSize parses sizes like "512M", "2G", "1GiB", "1048576" (bytes) into bytes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(s), "iB"), "B")
	mult := int64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M', 'm':
			mult = 1 << 20
		case 'G', 'g':
			mult = 1 << 30
		case 'T', 't':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return n * mult, nil
}
