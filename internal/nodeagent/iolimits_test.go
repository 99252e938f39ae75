package nodeagent

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/iolimit"
)

// TestIOLimiter drives the limiter over a mount table and a cgroup tree in files: pvc-a (capped) is
// published to pods p1 and p2, pvc-b (no caps) to p3; p2's cgroup is gone (the pod ended).
func TestIOLimiter(t *testing.T) {
	dir := t.TempDir()
	const k = "/var/lib/kubelet/pods/"
	mi := filepath.Join(dir, "mountinfo")
	mustWrite(t, mi, "22 1 0:21 / / rw - ext4 /dev/root rw\n"+
		"30 22 253:3 / "+k+"p1/volumes/kubernetes.io~csi/pvc-a/mount rw - ext4 /nonexistent rw\n"+
		"31 22 253:3 / "+k+"p2/volumes/kubernetes.io~csi/pvc-a/mount rw - ext4 /nonexistent rw\n"+
		"32 22 253:4 / "+k+"p3/volumes/kubernetes.io~csi/pvc-b/mount rw - ext4 /nonexistent rw\n")
	cg := filepath.Join(dir, "cgroup")
	for _, p := range []string{"p1", "p3"} {
		mustWrite(t, filepath.Join(cg, "kubepods", "burstable", "pod"+p, "io.max"), "")
	}
	scheme := runtime.NewScheme()
	if err := topolvmv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	capped := logicalVolume("pvc-a", "uid-a", "node-1", "id-a")
	capped.Spec.IOLimits = &topolvmv1.IOLimits{WriteBytesPerSecond: 2048}
	plain := logicalVolume("pvc-b", "uid-b", "node-1", "id-b")
	other := logicalVolume("pvc-c", "uid-c", "node-2", "id-a") // another node's volume of the same ID
	other.Spec.IOLimits = &topolvmv1.IOLimits{ReadIOPS: 1}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(capped, plain, other).Build()
	l := NewIOLimiter(&iolimit.Host{CgroupRoot: cg, MountInfo: mi}, cl, "node-1")

	n, err := l.Limit(t.Context(), "pvc-a", capped.Spec.IOLimits)
	if err != nil || n != 1 {
		t.Fatalf("Limit(pvc-a) = %d, %v; want 1 pod (p2 has ended)", n, err)
	}
	ioMax := func(pod string) string {
		b, err := os.ReadFile(filepath.Join(cg, "kubepods", "burstable", "pod"+pod, "io.max"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := ioMax("p1"); got != "253:3 rbps=max wbps=2048 riops=max wiops=max" {
		t.Errorf("p1 io.max %q", got)
	}

	// A new publish of the capped volume is capped; one of a volume without caps is not touched.
	mustWrite(t, filepath.Join(cg, "kubepods", "burstable", "podp1", "io.max"), "")
	if err := l.LimitPublished(t.Context(), "id-a", k+"p1/volumes/kubernetes.io~csi/pvc-a/mount"); err != nil {
		t.Fatal(err)
	}
	if got := ioMax("p1"); got != "253:3 rbps=max wbps=2048 riops=max wiops=max" {
		t.Errorf("p1 io.max after publish %q", got)
	}
	if err := l.LimitPublished(t.Context(), "id-b", k+"p3/volumes/kubernetes.io~csi/pvc-b/mount"); err != nil {
		t.Fatal(err)
	}
	if got := ioMax("p3"); got != "" {
		t.Errorf("p3 (no caps) io.max %q, want untouched", got)
	}

	// Caps removed: the pods' entries are removed (all max).
	if n, err := l.Limit(t.Context(), "pvc-a", nil); err != nil || n != 1 {
		t.Fatalf("Limit(pvc-a, nil) = %d, %v", n, err)
	}
	if got := ioMax("p1"); got != "253:3 rbps=max wbps=max riops=max wiops=max" {
		t.Errorf("p1 io.max after removal %q", got)
	}
}

func mustWrite(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
