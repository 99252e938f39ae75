package devcluster

import (
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is an io.Writer safe for the supervisor's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestKilledComponentStartsAgain kills a running component with SIGKILL, as the chaos test kills
// kube-apiserver and etcd: the supervisor starts it again under a new pid, and once the cluster
// stops it is not started again.
func TestKilledComponentStartsAgain(t *testing.T) {
	l, err := NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{l.Logs(), l.Run()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := &syncBuffer{}
	c := &cluster{l: l, out: out, state: State{Ports: map[string]int{}}}
	s := spec{name: "sleeper", path: "/bin/sh", args: []string{"-c", "exec sleep 300"}}
	ready := func(context.Context) error { return nil }
	if err := c.run(t.Context(), s, ready); err != nil {
		t.Fatal(err)
	}
	first := pidOf(t, l, "sleeper")
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	second := first
	for second == first || second == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no new sleeper after SIGKILL of pid %d; supervisor said:\n%s", first, out.String())
		}
		time.Sleep(100 * time.Millisecond)
		second = pidOf(t, l, "sleeper")
	}
	if !strings.Contains(out.String(), "sleeper exited (signal: killed): starting it again") {
		t.Errorf("the supervisor's output does not say it started sleeper again:\n%s", out.String())
	}
	if err := c.stopAll(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * restartDelay)
	if pid := pidOf(t, l, "sleeper"); pid != 0 {
		t.Errorf("sleeper was started again (pid %d) after the cluster stopped", pid)
	}
	if syscall.Kill(second, 0) == nil {
		t.Errorf("sleeper pid %d still runs after stopAll", second)
	}
}

func pidOf(t *testing.T, l Layout, name string) int {
	t.Helper()
	pid, err := readPID(l.PIDFile(name))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
