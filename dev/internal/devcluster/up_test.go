package devcluster

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeSupervisor writes an executable shell script standing in for lvms-dev, its body made from the
// layout (whose log directory exists), and returns both.
func fakeSupervisor(t *testing.T, script func(Layout) string) (Layout, string) {
	t.Helper()
	l, err := NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(l.Logs(), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "lvms-dev")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+script(l)+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return l, bin
}

// An alive supervisor whose command line does not name the state directory is what /proc shows
// while the kernel still builds the new image after cmd.Start returned (its cmdline is empty
// then): follow must wait for it, not report it gone.
func TestFollowWaitsForASupervisorProcDoesNotNameYet(t *testing.T) {
	// The script's own process becomes "sleep 30"; a child marks the cluster ready.
	l, bin := fakeSupervisor(t, func(l Layout) string {
		return "( sleep 0.3; : > '" + l.Ready() + "' ) &\nexec sleep 30"
	})
	sup, err := spawnSupervisor(l, bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(sup.pid, syscall.SIGKILL)
		<-sup.exited
	})
	if err := follow(context.Background(), l, sup, 20*time.Second, io.Discard); err != nil {
		t.Fatalf("follow: %v, want the cluster ready", err)
	}
}

func TestFollowSaysHowTheSupervisorExited(t *testing.T) {
	l, bin := fakeSupervisor(t, func(Layout) string { return "echo cannot start; exit 3" })
	sup, err := spawnSupervisor(l, bin)
	if err != nil {
		t.Fatal(err)
	}
	err = follow(context.Background(), l, sup, 20*time.Second, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "exited (exit status 3)") ||
		!strings.Contains(err.Error(), "cannot start") {
		t.Fatalf("follow: %v, want the exit status and the log's last lines", err)
	}
}
