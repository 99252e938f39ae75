//go:build !guest

package devcluster

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// logWriter forwards progress lines to t.Log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestDevClusterUpDown brings up a one-node dev cluster from the images in _output/images (make
// images builds them), checks that the node is Ready on containerd and the product's operator is
// Available, brings it down and checks that nothing is left. Each phase is timed.
func TestDevClusterUpDown(t *testing.T) {
	if os.Getenv("LVMS_UML_TESTS") != "1" {
		t.Skip("boots a User-mode Linux guest and a control plane; set LVMS_UML_TESTS=1 (hack/test-lvm.sh does)")
	}
	if _, err := exec.LookPath("linux.uml"); err != nil {
		t.Fatalf("linux.uml not installed; run hack/uml-deps.sh: %v", err)
	}
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	out := logWriter{t}
	t.Cleanup(func() {
		if err := Down(context.Background(), state, out); err != nil {
			t.Errorf("cleanup down: %v", err)
		}
	})

	start := time.Now()
	err := Up(ctx, UpOptions{StateDir: state, Nodes: 1, Disks: 2, DiskSize: 4 << 30,
		Timeout: 8 * time.Minute, Out: out})
	t.Logf("PHASE up: %s", time.Since(start).Round(100*time.Millisecond))
	if err != nil {
		t.Fatalf("up: %v", err)
	}

	start = time.Now()
	var cfg Config
	if err := readJSON(filepath.Join(state, "config.json"), &cfg); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(cfg.KubeAssets, "kubectl"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(state, "kubeconfig"))
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return string(b)
	}
	nodes := kubectl("get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	if strings.TrimSpace(nodes) != "node-0=True" {
		t.Errorf("kubectl get nodes: want node-0=True, got %q", nodes)
	}
	runtime := kubectl("get", "node", "node-0", "-o", "jsonpath={.status.nodeInfo.containerRuntimeVersion}")
	if !strings.HasPrefix(runtime, "containerd://") {
		t.Errorf("node-0 container runtime %q, want containerd", runtime)
	}
	available := kubectl("-n", Namespace, "get", "deployment", "lvms-operator", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
	if available != "True" {
		t.Errorf("deployment lvms-operator Available=%q, want True", available)
	}
	t.Logf("PHASE checks: %s", time.Since(start).Round(100*time.Millisecond))

	start = time.Now()
	if err := Down(ctx, state, out); err != nil {
		t.Fatalf("down: %v", err)
	}
	t.Logf("PHASE down: %s", time.Since(start).Round(100*time.Millisecond))

	var status bytes.Buffer
	clean, err := Status(state, &status)
	if err != nil || !clean {
		t.Errorf("status after down: clean=%t err=%v\n%s", clean, err, status.String())
	}
	if err := Down(ctx, state, out); err != nil {
		t.Errorf("second down (idempotent): %v", err)
	}
}
