package exec_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// TestTimeoutKillsProcessGroup runs a shell that forks a long sleep and waits for it, as nsenter waits
// for the child it forks. The deadline must end the command and the child: the error says it timed
// out, and the child's PID is gone (or a zombie waiting to be reaped).
func TestTimeoutKillsProcessGroup(t *testing.T) {
	tests := []struct {
		name   string
		opts   []exec.HostOption
		ctx    func(context.Context) (context.Context, context.CancelFunc)
		wantIs []error
	}{
		{
			name:   "host timeout",
			opts:   []exec.HostOption{exec.WithTimeout(300 * time.Millisecond)},
			ctx:    context.WithCancel,
			wantIs: []error{exec.ErrTimeout, context.DeadlineExceeded},
		},
		{
			name: "caller cancels",
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, 300*time.Millisecond)
			},
			wantIs: []error{context.DeadlineExceeded},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx(t.Context())
			defer cancel()
			var child string
			err := exec.NewHost(tt.opts...).Exec(ctx, exec.Cmd{
				Name: "sh",
				Args: []string{"-c", "sleep 600 & echo $!; wait"},
				Stdout: func(r io.Reader) error {
					line, err := bufio.NewReader(r).ReadString('\n')
					child = strings.TrimSpace(line)
					return err
				},
			})
			for _, want := range tt.wantIs {
				if !errors.Is(err, want) {
					t.Errorf("error %v is not %v", err, want)
				}
			}
			if child == "" {
				t.Fatal("the shell did not report its child's PID")
			}
			waitGone(t, child)
		})
	}
}

// waitGone waits until PID pid no longer runs; the wait is bounded so a surviving child fails the test
// instead of hanging it.
func waitGone(t *testing.T, pid string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		// Field 3 is the state; a zombie is dead, only not yet reaped by its new parent.
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %s still runs after the command was killed: %s", pid, stat)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFinishOnCancel: with FinishOnCancel a command the caller's context cancels while it runs goes
// on to its end (a node agent shutting down must not kill an lvcreate half-way), its own deadline
// still ends it, and a command is not started once the context is done.
func TestFinishOnCancel(t *testing.T) {
	h := exec.NewHost(exec.WithFinishOnCancel(), exec.WithTimeout(10*time.Second))
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	out, err := exec.Run(ctx, h, "sh", "-c", "sleep 0.5; echo finished")
	if err != nil || strings.TrimSpace(string(out)) != "finished" {
		t.Fatalf("a command whose caller cancelled while it ran: %q, %v; want it finished", out, err)
	}
	if _, err := exec.Run(ctx, h, "true"); err == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("a command after the cancel: %v, want not started", err)
	}
	short := exec.NewHost(exec.WithFinishOnCancel(), exec.WithTimeout(200*time.Millisecond))
	if _, err := exec.Run(t.Context(), short, "sleep", "5"); !errors.Is(err, exec.ErrTimeout) {
		t.Errorf("a command past its own deadline: %v, want %v", err, exec.ErrTimeout)
	}
}
