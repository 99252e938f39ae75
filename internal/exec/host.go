package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	osexec "os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
)

// DefaultPath is the PATH commands run with unless Host.Path is set.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// DefaultTimeout is how long one command may run unless Host.Timeout says
// otherwise. lvm2, blkid, wipefs and mkfs finish in seconds on a healthy
// device; the deadline only ends a command that hangs.
const DefaultTimeout = 5 * time.Minute

// maxStderr bounds how much stderr is kept for errors.
const maxStderr = 64 << 10

// NSEnterPrefix returns the prefix that runs a command in the namespaces of
// the host's PID 1, used by the node agent running in a privileged pod with
// hostPID.
func NSEnterPrefix() []string {
	return []string{"nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--"}
}

// Host runs commands on this machine with os/exec. The zero value is not
// usable; create it with NewHost.
type Host struct {
	// Prefix is prepended to every command line, e.g. NSEnterPrefix().
	Prefix []string
	// Path is the PATH of the commands; DefaultPath when empty.
	Path string
	// Env holds extra environment entries ("KEY=value") added after
	// LC_ALL=C and PATH.
	Env []string
	// WaitDelay bounds how long Exec waits for the output pipes to close
	// after the process exits or is killed (see os/exec.Cmd.WaitDelay).
	WaitDelay time.Duration
	// Timeout is the deadline of each command (DefaultTimeout when zero).
	// On expiry or cancellation the command's whole process group is
	// killed, so children such as the one nsenter forks die with it.
	Timeout time.Duration
	// FinishOnCancel lets a command that has started run to its end (or its
	// Timeout) when the caller's context is cancelled: a node agent that is
	// shutting down (a rollout, a drain) must not kill an lvcreate, lvremove
	// or dd half-way. A command is still not started once the context is done.
	FinishOnCancel bool

	counter *Counter
}

// HostOption configures a Host.
type HostOption func(*Host)

// WithPrefix sets the command prefix (e.g. NSEnterPrefix()).
func WithPrefix(prefix ...string) HostOption {
	return func(h *Host) { h.Prefix = slices.Clone(prefix) }
}

// WithEnv adds environment entries ("KEY=value").
func WithEnv(env ...string) HostOption {
	return func(h *Host) { h.Env = append(h.Env, env...) }
}

// WithPath sets PATH for the commands.
func WithPath(path string) HostOption {
	return func(h *Host) { h.Path = path }
}

// WithTimeout sets the deadline of each command.
func WithTimeout(d time.Duration) HostOption {
	return func(h *Host) { h.Timeout = d }
}

// WithFinishOnCancel sets FinishOnCancel.
func WithFinishOnCancel() HostOption {
	return func(h *Host) { h.FinishOnCancel = true }
}

// NewHost returns a Host executor with its own execution Counter.
func NewHost(opts ...HostOption) *Host {
	h := &Host{WaitDelay: 10 * time.Second, Timeout: DefaultTimeout, counter: NewCounter()}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Counter returns the executions counter of h.
func (h *Host) Counter() *Counter { return h.counter }

// Exec implements Executor.
func (h *Host) Exec(ctx context.Context, c Cmd) error {
	log := logr.FromContextOrDiscard(ctx)
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if h.FinishOnCancel {
		if err := ctx.Err(); err != nil {
			return &Error{Cmd: c.Name, Args: slices.Clone(c.Args), ExitCode: -1,
				Err: fmt.Errorf("not started: %w", context.Cause(ctx))}
		}
		ctx = context.WithoutCancel(ctx)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout,
		fmt.Errorf("%w: %s ran longer than %s (%w)", ErrTimeout, c.Name, timeout, context.DeadlineExceeded))
	defer cancel()
	argv := append(slices.Clone(h.Prefix), c.Name)
	argv = append(argv, c.Args...)
	cmd := osexec.CommandContext(
		ctx,
		argv[0],
		argv[1:]...) //nolint:gosec // running host commands is this package's purpose
	// Its own process group, killed as a whole on cancel: a child the
	// command forked (nsenter's, a shell's) must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	path := h.Path
	if path == "" {
		path = DefaultPath
	}
	cmd.Env = append([]string{"LC_ALL=C", "PATH=" + path}, h.Env...)
	cmd.Stdin = c.Stdin
	cmd.WaitDelay = h.WaitDelay
	stderr := &limitedBuffer{max: maxStderr}
	cmd.Stderr = stderr

	h.counter.Add(c.Name)
	log.V(1).Info("Running command", "cmd", c.String())
	start := time.Now()
	runErr, stdoutErr := run(cmd, c.Stdout)
	elapsed := time.Since(start)
	if runErr != nil {
		e := &Error{Cmd: c.Name, Args: slices.Clone(c.Args), ExitCode: -1, Stderr: stderr.String(), Err: runErr}
		var exitErr *osexec.ExitError
		if errors.As(runErr, &exitErr) {
			e.ExitCode = exitErr.ExitCode()
		}
		if ctx.Err() != nil {
			e.Err = fmt.Errorf("%w (%w)", context.Cause(ctx), runErr)
		}
		log.V(1).Info("Command failed", "cmd", c.String(), "exitCode", e.ExitCode, "duration", elapsed)
		return e
	}
	log.V(1).Info("Command finished", "cmd", c.String(), "duration", elapsed)
	if stdoutErr != nil {
		return fmt.Errorf("%s: read output: %w", c.String(), stdoutErr)
	}
	return nil
}

// run starts cmd, hands its stdout to consume, drains what consume left and
// waits. It returns the command's error and consume's error separately.
func run(cmd *osexec.Cmd, consume func(io.Reader) error) (runErr, consumeErr error) {
	if consume == nil {
		cmd.Stdout = io.Discard
		return cmd.Run(), nil
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err, nil
	}
	if err := cmd.Start(); err != nil {
		return err, nil
	}
	consumeErr = consume(stdout)
	// Drain so the process never blocks on a full pipe and Wait does not
	// close the pipe under a still-writing process.
	_, drainErr := io.Copy(io.Discard, stdout)
	runErr = cmd.Wait()
	if consumeErr == nil && drainErr != nil && runErr == nil {
		consumeErr = drainErr
	}
	return runErr, consumeErr
}

// limitedBuffer keeps the first max bytes written to it and discards the
// rest, so a chatty command cannot exhaust memory.
type limitedBuffer struct {
	mu        sync.Mutex
	buf       []byte
	max       int
	truncated bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.max - len(b.buf)
	if room < len(p) {
		b.truncated = true
		if room > 0 {
			b.buf = append(b.buf, p[:room]...)
		}
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.truncated {
		return string(b.buf) + "\n[stderr truncated]"
	}
	return string(b.buf)
}
