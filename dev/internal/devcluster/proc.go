package devcluster

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a host process the supervisor started, in its own process group, logging to a file.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	pid    string
	exited chan struct{}
	err    error // valid after exited is closed
}

// spec describes a host process.
type spec struct {
	name string
	path string
	args []string
	env  []string
}

// startProc starts s with stdout and stderr appended to its log and writes its pid file.
func startProc(l Layout, s spec) (*proc, error) {
	logPath := l.Log(s.name)
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log of %s: %w", s.name, err)
	}
	defer f.Close()
	fmt.Fprintf(f, "=== %s %s %s\n", time.Now().Format(time.RFC3339), s.path, strings.Join(s.args, " "))
	cmd := exec.Command(s.path, s.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = l.Dir
	cmd.Env = append(os.Environ(), s.env...)
	// Own group so stop reaches children; SIGKILL if the supervisor dies without tearing down.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.name, err)
	}
	p := &proc{name: s.name, cmd: cmd, log: logPath, pid: l.PIDFile(s.name), exited: make(chan struct{})}
	if err := os.WriteFile(p.pid, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		p.stop(0)
		return nil, fmt.Errorf("write pid file of %s: %w", s.name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// stop sends SIGTERM to the process group, SIGKILL after grace, waits and removes the pid file.
func (p *proc) stop(grace time.Duration) {
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	<-p.exited
	_ = os.Remove(p.pid)
}

// failure is the error for a component that did not come up: its name, the cause, its log
// file and the log's last lines.
func failure(name, logPath string, cause error) error {
	return fmt.Errorf("%s did not come up: %w\nlog %s, last lines:\n%s", name, cause, logPath, tailFile(logPath, 25))
}

// tailFile returns the last n lines of a file, indented, or why it cannot be read.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  | " + strings.Join(lines, "\n  | ")
}

// readPID returns the pid in a pid file, 0 if the file does not exist.
func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("pid file %s: bad pid %q", path, bytes.TrimSpace(b))
	}
	return pid, nil
}

// aliveUnder reports whether process pid exists and its command line or executable mentions
// dir (so a recycled pid of an unrelated process is never taken for ours). While a process execs,
// its command line is empty for a moment: a child just started is followed through its Wait instead.
func aliveUnder(pid int, dir string) bool {
	if pid <= 1 || syscall.Kill(pid, 0) != nil {
		return false
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return false
	}
	if stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil {
		// A zombie is gone for our purposes.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			return false
		}
	}
	return bytes.Contains(cmdline, []byte(dir))
}

// freePort returns a port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// listening reports whether something accepts connections on 127.0.0.1:port.
func listening(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 300*time.Millisecond)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
