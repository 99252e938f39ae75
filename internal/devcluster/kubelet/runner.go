package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"strings"
	"syscall"
	"time"
)

// Mount is a host path made visible to a pod process at ContainerPath.
type Mount struct {
	// HostPath is a directory, or for a block volume the file the device is published on.
	HostPath      string
	ContainerPath string
	ReadOnly      bool
	// File is true when HostPath is a file (block volume devices).
	File bool
}

// ProcessSpec is what a Runner starts for a pod.
type ProcessSpec struct {
	// Argv is the container's command followed by its args.
	Argv []string
	// Env is the complete environment (KEY=value).
	Env []string
	// WorkingDir is entered after the mounts are in place; empty keeps the runner's directory.
	WorkingDir string
	Mounts     []Mount
	// Output receives stdout and stderr.
	Output io.Writer
	// Grace is how long the process has to exit after SIGTERM before it is killed.
	Grace time.Duration
}

// Process is a started pod process.
type Process interface {
	// Wait blocks until the process exits and returns its exit code (128+signal when killed by one).
	Wait() (int, error)
}

// Runner starts pod processes. Cancelling the context passed to Start stops the process: SIGTERM to
// its process group, SIGKILL after the grace period.
type Runner interface {
	Start(ctx context.Context, spec ProcessSpec) (Process, error)
}

// DefaultNamespacePrefix returns the command prefix that runs the pod process in a private mount
// namespace (util-linux unshare; needs root, as in a dev-cluster guest).
func DefaultNamespacePrefix() []string {
	return []string{"unshare", "--mount", "--propagation", "private", "--"}
}

// ExecRunner runs pod processes as children: Prefix (an unshare command line that ends where the
// command starts) followed by a shell that bind-mounts the volumes and execs the container command.
type ExecRunner struct {
	// Prefix defaults to DefaultNamespacePrefix. Tests use an unprivileged user namespace.
	Prefix []string
	// Shell defaults to /bin/sh.
	Shell string
}

// Argv returns the full command line that runs spec.
func (r ExecRunner) Argv(spec ProcessSpec) []string {
	prefix, shell := r.Prefix, r.Shell
	if prefix == nil {
		prefix = DefaultNamespacePrefix()
	}
	if shell == "" {
		shell = "/bin/sh"
	}
	argv := append([]string{}, prefix...)
	argv = append(argv, shell, "-c", MountScript(spec.Mounts, spec.WorkingDir), "lvms-pod")
	return append(argv, spec.Argv...)
}

// MountScript is the shell script that creates each mount point, bind-mounts the volume there
// (read-only when asked), enters dir and execs its arguments.
func MountScript(mounts []Mount, dir string) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	for _, m := range mounts {
		p, h := shellQuote(m.ContainerPath), shellQuote(m.HostPath)
		if m.File {
			fmt.Fprintf(&b, "mkdir -p %s\n[ -e %s ] || : > %s\n", shellQuote(path.Dir(m.ContainerPath)), p, p)
		} else {
			fmt.Fprintf(&b, "mkdir -p %s\n", p)
		}
		fmt.Fprintf(&b, "mount --bind %s %s\n", h, p)
		if m.ReadOnly {
			fmt.Fprintf(&b, "mount -o remount,bind,ro %s\n", p)
		}
	}
	if dir != "" {
		fmt.Fprintf(&b, "cd %s\n", shellQuote(dir))
	}
	b.WriteString(`exec "$@"` + "\n")
	return b.String()
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Start starts the process in its own process group.
func (r ExecRunner) Start(ctx context.Context, spec ProcessSpec) (Process, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("no command")
	}
	argv := r.Argv(spec)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = spec.Env
	cmd.Stdout, cmd.Stderr = spec.Output, spec.Output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	p := &execProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	go p.stopOn(ctx, spec.Grace)
	return p, nil
}

type execProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// stopOn terminates the process group when ctx ends before the process does.
func (p *execProcess) stopOn(ctx context.Context, grace time.Duration) {
	select {
	case <-p.done:
		return
	case <-ctx.Done():
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM) // the group may be gone already
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // also reaps children left behind by the leader
}

func (p *execProcess) Wait() (int, error) {
	<-p.done
	if p.err == nil {
		return 0, nil
	}
	var exitErr *exec.ExitError
	if !errors.As(p.err, &exitErr) {
		return -1, fmt.Errorf("wait: %w", p.err)
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return exitErr.ExitCode(), nil
}
