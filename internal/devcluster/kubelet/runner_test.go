package kubelet

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestMountScript(t *testing.T) {
	tests := []struct {
		name   string
		mounts []Mount
		dir    string
		want   []string
	}{
		{name: "no mounts", want: []string{"set -e", `exec "$@"`}},
		{name: "directory, read-only, quoted", mounts: []Mount{{HostPath: "/t/it's", ContainerPath: "/data", ReadOnly: true}}, dir: "/data",
			want: []string{"set -e", "mkdir -p '/data'", `mount --bind '/t/it'\''s' '/data'`,
				"mount -o remount,bind,ro '/data'", "cd '/data'", `exec "$@"`}},
		{name: "block device file", mounts: []Mount{{HostPath: "/t/pv", ContainerPath: "/dev/xvda", File: true}},
			want: []string{"set -e", "mkdir -p '/dev'", "[ -e '/dev/xvda' ] || : > '/dev/xvda'",
				"mount --bind '/t/pv' '/dev/xvda'", `exec "$@"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Split(strings.TrimSuffix(MountScript(tt.mounts, tt.dir), "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("script:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// userNamespaceRunner returns a runner that works without root, or skips.
func userNamespaceRunner(t *testing.T) ExecRunner {
	t.Helper()
	prefix := []string{"unshare", "--user", "--map-root-user", "--mount", "--propagation", "private", "--"}
	if err := exec.Command(prefix[0], append(prefix[1:], "true")...).Run(); err != nil {
		t.Skipf("unprivileged user and mount namespaces unavailable: %v", err)
	}
	return ExecRunner{Prefix: prefix}
}

// TestExecRunner runs real processes in a private mount namespace.
func TestExecRunner(t *testing.T) {
	r := userNamespaceRunner(t)
	tests := []struct {
		name     string
		script   string
		readOnly bool
		cancel   bool
		wantCode int
		wantOut  string
	}{
		{name: "volume visible at the mount path", script: `cat "$MNT/marker"; echo "$GREETING"`, wantOut: "published\nhello\n"},
		{name: "exit code", script: "exit 7", wantCode: 7},
		{name: "read-only mount", script: `(echo x > "$MNT/new") 2>/dev/null && echo writable || echo readonly`, readOnly: true, wantOut: "readonly\n"},
		{name: "stopped with SIGTERM", script: "trap 'exit 143' TERM; echo up; while :; do sleep 0.05; done", cancel: true, wantCode: 143, wantOut: "up\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host, mnt := t.TempDir(), filepath.Join(t.TempDir(), "data")
			if err := os.WriteFile(filepath.Join(host, "marker"), []byte("published\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out syncBuffer
			p, err := r.Start(ctx, ProcessSpec{Argv: []string{"sh", "-c", tt.script},
				Env:    []string{"PATH=" + basePath, "MNT=" + mnt, "GREETING=hello"},
				Mounts: []Mount{{HostPath: host, ContainerPath: mnt, ReadOnly: tt.readOnly}}, Output: &out, Grace: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if tt.cancel {
				eventually(t, "process up", func() bool { return strings.Contains(out.String(), "up") })
				cancel()
			}
			code, err := p.Wait()
			if err != nil {
				t.Fatal(err)
			}
			// A process killed by the group signal may add the shell's "Terminated" line.
			if code != tt.wantCode || !strings.HasPrefix(out.String(), tt.wantOut) {
				t.Errorf("exit %d output %q, want %d %q", code, out.String(), tt.wantCode, tt.wantOut)
			}
			if _, err := os.Stat(filepath.Join(mnt, "marker")); err == nil {
				t.Error("the bind mount leaked out of the private mount namespace")
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a process writing while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
func TestHelpers(t *testing.T) {
	t.Run("lastLines", func(t *testing.T) {
		for _, tt := range []struct {
			in   string
			n    int
			want string
		}{{"a\nb\nc\n", 2, "b\nc"}, {"a", 5, "a"}, {"", 3, ""}} {
			if got := lastLines(tt.in, tt.n); got != tt.want {
				t.Errorf("lastLines(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
		}
	})
	t.Run("restarts", func(t *testing.T) {
		for _, tt := range []struct {
			policy corev1.RestartPolicy
			code   int
			want   bool
		}{{corev1.RestartPolicyNever, 1, false}, {corev1.RestartPolicyOnFailure, 1, true},
			{corev1.RestartPolicyOnFailure, 0, false}, {corev1.RestartPolicyAlways, 0, true}} {
			if got := restarts(tt.policy, tt.code); got != tt.want {
				t.Errorf("restarts(%s, %d) = %v", tt.policy, tt.code, got)
			}
		}
	})
}
