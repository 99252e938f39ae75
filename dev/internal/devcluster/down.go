package devcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// supervisorGrace is how long down waits for the supervisor's own teardown.
const supervisorGrace = 90 * time.Second

// Down stops the cluster in stateDir: SIGTERM to the supervisor, a wait for its teardown, then
// SIGKILL for every process group a pid file still names; pid files and guest directories are
// removed.
// Running it on a stopped cluster (or an empty directory) changes nothing.
func Down(ctx context.Context, stateDir string, out io.Writer) error {
	l, err := NewLayout(stateDir)
	if err != nil {
		return err
	}
	start := time.Now()
	stopped := false
	if pid, _ := readPID(l.PIDFile("supervisor")); aliveUnder(pid, l.Dir) {
		fmt.Fprintf(out, "stopping supervisor (pid %d) …\n", pid)
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal supervisor: %w", err)
		}
		if !waitGone(ctx, pid, l.Dir, supervisorGrace) {
			fmt.Fprintf(out, "supervisor did not stop within %s; killing it\n", supervisorGrace)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		stopped = true
	}
	for _, lo := range leftovers(l) {
		fmt.Fprintf(out, "killing leftover %s (pid %d)\n", lo.name, lo.pid)
		_ = syscall.Kill(-lo.pid, syscall.SIGKILL)
		_ = syscall.Kill(lo.pid, syscall.SIGKILL)
		if !waitGone(ctx, lo.pid, l.Dir, 10*time.Second) {
			return fmt.Errorf("%s (pid %d) survived SIGKILL", lo.name, lo.pid)
		}
		stopped = true
	}
	var errs []error
	for _, p := range []string{l.Run(), l.Guests(), l.Ready()} {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if stopped {
		fmt.Fprintf(out, "dev cluster stopped in %s\n", time.Since(start).Round(100*time.Millisecond))
	} else {
		fmt.Fprintf(out, "no dev cluster running in %s\n", l.Dir)
	}
	return nil
}

// waitGone waits until pid is no longer one of ours.
func waitGone(ctx context.Context, pid int, dir string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for aliveUnder(pid, dir) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// leftover is a live process a pid file under the state directory names.
type leftover struct {
	name string
	pid  int
}

// leftovers lists live processes named by the component pid files and by the guests' UML pid
// files (<guests>/<run>/uml/<umid>/pid), never by process name.
func leftovers(l Layout) []leftover {
	var found []leftover
	files, _ := filepath.Glob(filepath.Join(l.Run(), "*.pid"))
	guestFiles, _ := filepath.Glob(filepath.Join(l.Guests(), "*", "uml", "*", "pid"))
	for _, f := range append(files, guestFiles...) {
		pid, err := readPID(f)
		if err != nil || !aliveUnder(pid, l.Dir) {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(f), ".pid")
		if name == "pid" {
			name = "guest " + filepath.Base(filepath.Dir(f))
		}
		found = append(found, leftover{name: name, pid: pid})
	}
	return found
}

// findLeftovers names the leftovers, for messages.
func findLeftovers(l Layout) []string {
	var names []string
	for _, lo := range leftovers(l) {
		names = append(names, fmt.Sprintf("%s pid %d", lo.name, lo.pid))
	}
	return names
}
