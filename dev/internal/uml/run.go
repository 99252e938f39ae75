package uml

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Disk is a sparse disk file attached to the guest; disk i is /dev/ubd<a+i>.
type Disk struct {
	// Size in bytes.
	Size int64
	// ReadOnly attaches the disk read-only (the guest's blockdev --getro reports 1).
	ReadOnly bool
}

// SerialLine hands a host file to the guest as serial line /dev/ttyS<Index> (UML "ssl<Index>=fd:N").
// File is used for both directions, e.g. one end of a socketpair; Run does not close it.
type SerialLine struct {
	Index int
	File  *os.File
}

// Options describe one guest run. Only Command is required.
type Options struct {
	// Command runs in the guest as root; Command[0] is a path valid in the guest.
	Command []string
	// Env is added to the guest command's environment (see the package doc for the base).
	Env map[string]string
	// Dir is the command's working directory in the guest; "/" when empty.
	Dir string
	// Disks are attached in order as /dev/ubda, /dev/ubdb, ...
	Disks []Disk
	// MemoryMiB is the guest memory; 512 when zero.
	MemoryMiB int
	// Timeout bounds the whole run (boot, command, power-off); none when zero besides ctx.
	Timeout time.Duration
	// Stdout receives the console from the moment the command starts (plus setup failures);
	// nil discards it. Result.Output holds everything either way.
	Stdout io.Writer
	// ShowBoot also forwards kernel and init messages before the command starts.
	ShowBoot bool
	// SharedDirs are host directories mounted read-write at the same path in the guest.
	SharedDirs []string
	// OutDir is a host directory the guest sees read-write at the same path, exported to the
	// command as LVMS_GUEST_OUT. When empty, a directory inside the run's temporary directory
	// is used and deleted with it.
	OutDir string
	// SerialLines are passed to UML as inherited file descriptors.
	SerialLines []SerialLine
	// KernelArgs are appended to the UML command line.
	KernelArgs []string
	// Kernel is the UML binary; "linux.uml" from PATH when empty.
	Kernel string
	// HackDir holds guest-init.sh and xstate-shim.c; found by walking up from the working
	// directory to hack/uml when empty.
	HackDir string
	// CacheDir receives the built shim; ${XDG_CACHE_HOME:-$HOME/.cache}/lvms/uml when empty.
	CacheDir string
	// TempDir is where the per-run directory (disks, spec, uml_dir) is created; os.TempDir()
	// when empty. Its path must hold no spaces or commas.
	TempDir string
	// NoShim skips preloading the xstate shim (for diagnosing it).
	NoShim bool
}

// Result is the outcome of a guest run. Run returns it, possibly partial, also with an error.
type Result struct {
	// ExitCode is the command's exit status as reported by the guest.
	ExitCode int
	// Output is the whole console, "\r\n" turned into "\n".
	Output []byte
	// Boot is the time from starting UML to the guest starting the command.
	Boot time.Duration
	// Command is the time the command ran, as seen from the host console.
	Command time.Duration
	// Total is the time from starting UML until it exited.
	Total time.Duration
}

// ErrNoExitCode means the guest ended without printing GUEST-EXIT: it failed to boot, its
// init failed, or it crashed.
var ErrNoExitCode = errors.New("guest ended without reporting an exit code")

// Time UML gets to power off after the exit marker, to exit after SIGTERM, and the console to
// drain afterwards.
const (
	shutdownGrace = 20 * time.Second
	termGrace     = 5 * time.Second
	drainGrace    = 5 * time.Second
)

// Run boots a guest, runs opts.Command in it and returns its exit code. A non-zero exit code is
// not an error; a guest that fails to report one is (ErrNoExitCode, or the context's error).
func Run(ctx context.Context, opts Options) (*Result, error) {
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	runDir, err := os.MkdirTemp(opts.TempDir, "lvms-uml-")
	if err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	defer os.RemoveAll(runDir)

	kernel, args, preload, err := prepare(ctx, opts, runDir)
	if err != nil {
		return nil, err
	}
	return boot(ctx, opts, kernel, args, preload, runDir)
}

// prepare creates the disks and the run spec and returns the UML binary, its arguments and the
// library to preload ("" for none).
func prepare(
	ctx context.Context,
	opts Options,
	runDir string,
) (kernel string, args []string, preload string, err error) {
	kernel = opts.Kernel
	if kernel == "" {
		kernel = "linux.uml"
	}
	if kernel, err = exec.LookPath(kernel); err != nil {
		return "", nil, "", fmt.Errorf("UML kernel not found (run hack/uml-deps.sh): %w", err)
	}
	hackDir, err := findHackDir(opts.HackDir)
	if err != nil {
		return "", nil, "", err
	}
	if !opts.NoShim {
		cacheDir := opts.CacheDir
		if cacheDir == "" {
			if cacheDir, err = defaultCacheDir(); err != nil {
				return "", nil, "", err
			}
		}
		if preload, err = ensureShim(ctx, hackDir, cacheDir); err != nil {
			return "", nil, "", err
		}
	}
	cfg, err := writeRunFiles(opts, runDir)
	if err != nil {
		return "", nil, "", err
	}
	cfg.initPath = filepath.Join(hackDir, initScriptName)
	args, err = kernelArgs(cfg)
	if err != nil {
		return "", nil, "", err
	}
	return kernel, args, preload, nil
}

// writeRunFiles creates the sparse disks, the out dir and spec.sh in runDir.
func writeRunFiles(opts Options, runDir string) (bootConfig, error) {
	cfg := bootConfig{
		memoryMiB: opts.MemoryMiB,
		runDir:    runDir,
		umlDir:    filepath.Join(runDir, "uml"),
		umid:      "lvms-" + strings.TrimPrefix(filepath.Base(runDir), "lvms-uml-"),
		extraArgs: opts.KernelArgs,
	}
	if cfg.memoryMiB <= 0 {
		cfg.memoryMiB = 512
	}
	if err := os.Mkdir(cfg.umlDir, 0o700); err != nil {
		return cfg, fmt.Errorf("create uml_dir: %w", err)
	}
	for i, d := range opts.Disks {
		p := filepath.Join(runDir, fmt.Sprintf("disk%d.img", i))
		if err := createSparse(p, d.Size); err != nil {
			return cfg, err
		}
		cfg.disks = append(cfg.disks, diskFile{path: p, readOnly: d.ReadOnly})
	}
	for i, s := range opts.SerialLines {
		cfg.serial = append(cfg.serial, serialArg{index: s.Index, fd: 3 + i})
	}
	shared := append([]string(nil), opts.SharedDirs...)
	outDir := opts.OutDir
	if outDir == "" {
		outDir = filepath.Join(runDir, "out")
		if err := os.Mkdir(outDir, 0o777); err != nil {
			return cfg, fmt.Errorf("create out dir: %w", err)
		}
	} else {
		abs, err := filepath.Abs(outDir)
		if err != nil {
			return cfg, fmt.Errorf("out dir: %w", err)
		}
		outDir = abs
		shared = append(shared, outDir)
	}
	spec, err := specScript(runSpec{
		command:    opts.Command,
		env:        guestEnv(opts.Env, outDir),
		workDir:    opts.Dir,
		sharedDirs: shared,
	})
	if err != nil {
		return cfg, err
	}
	if err := os.WriteFile(filepath.Join(runDir, "spec.sh"), []byte(spec), 0o644); err != nil {
		return cfg, fmt.Errorf("write run spec: %w", err)
	}
	return cfg, nil
}

func createSparse(path string, size int64) error {
	if size <= 0 {
		return fmt.Errorf("disk %s: size %d must be positive", path, size)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("create disk: %w", err)
	}
	if err := f.Truncate(size); err != nil {
		_ = f.Close()
		return fmt.Errorf("size disk %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close disk %s: %w", path, err)
	}
	return nil
}
