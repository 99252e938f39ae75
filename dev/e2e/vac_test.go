//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// vacWriteCap is the write cap of testVolumeAttributesClass's class: far below what a UML node
// writes uncapped (27 MiB/s measured in a guest), so a cap in force shows.
const vacWriteCap = 2 << 20

// ddCopied matches the writer's line per dd run: its number, the bytes written and the uptime
// (/proc/uptime, 10 ms resolution) before and after (the workload's busybox dd prints no time).
var ddCopied = regexp.MustCompile(`dd (\d+): (\d+) bytes from ([0-9.]+) to ([0-9.]+)`)

// testVolumeAttributesClass changes a running pod's claim to a VolumeAttributesClass that caps its
// writes and sets its LV's read-ahead, reads the io.max the node agent wrote into the pod's cgroup on
// the node and the read-ahead lvm2 set on the LV, and measures the pod's direct writes under the cap;
// a new pod of the claim (the first one deleted) is capped when the claim is published for it; then
// a class with "max" and "auto" removes the cap and gives the read-ahead back to the kernel.
func testVolumeAttributesClass(t *testing.T) {
	e := newEnv(t)
	slow := e.volumeAttributesClass("slow",
		map[string]string{driver.ParamWriteBPS: "2Mi", driver.ParamReadAhead: "1Mi"})
	fast := e.volumeAttributesClass("unlimited",
		map[string]string{driver.ParamWriteBPS: "max", driver.ParamReadAhead: "auto"})
	e.claim("vac", thinClass, "1Gi", false, "")
	pod := vacWriter("vac-writer")
	e.create(pod)
	running := e.running(pod.Name)
	e.waitOutput(pod.Name, "dd 1: ")
	t.Logf("direct writes in the pod without a class: %.2f MiB/s", e.ddRate(pod.Name, 1)/(1<<20))

	ra, kernel := e.readAhead("vac")
	t.Logf("read-ahead of the LV without a class: %s, on the device: %s sectors", ra, kernel)
	e.setClass("vac", slow)
	if ra, kernel := e.readAhead("vac"); ra != "2048" || kernel != "2048" {
		t.Errorf("read-ahead of the LV under a class asking for 1Mi: %s, on the device %s; want 2048 sectors", ra,
			kernel)
	} else {
		t.Logf("read-ahead of the LV under a class asking for 1Mi: %s, on the device: %s sectors", ra, kernel)
	}
	line := e.ioMax(running, "wbps=")
	t.Logf("io.max of pod %s on %s: %s", running.UID, running.Spec.NodeName, line)
	if !strings.Contains(line, fmt.Sprintf("wbps=%d ", vacWriteCap)) {
		t.Fatalf("io.max %q, want wbps=%d", line, vacWriteCap)
	}
	rate := e.ddRate(pod.Name, e.lastDD(pod.Name)+1)
	t.Logf("direct writes in the pod under a cap of %d MiB/s: %.2f MiB/s (%.0f %% of the cap)",
		vacWriteCap>>20, rate/(1<<20), 100*rate/vacWriteCap)
	if rate > 1.2*vacWriteCap {
		t.Errorf("the pod wrote %.2f MiB/s under a cap of %d MiB/s", rate/(1<<20), vacWriteCap>>20)
	}

	// A pod started later (here after the first is gone) gets the cap at publish, before it runs.
	e.deleteAll(pod)
	e.waitGone(pod)
	pod = vacWriter("vac-writer-2")
	e.create(pod)
	running = e.running(pod.Name)
	t.Logf("io.max of the new pod %s on %s: %s", running.UID, running.Spec.NodeName,
		e.ioMax(running, fmt.Sprintf("wbps=%d ", vacWriteCap)))

	e.setClass("vac", fast)
	e.ioMax(running, "")
	if ra, kernel := e.readAhead("vac"); ra != "auto" {
		t.Errorf("read-ahead of the LV under a class asking for auto: %s (device %s)", ra, kernel)
	} else {
		t.Logf("read-ahead of the LV under a class asking for auto: %s, on the device: %s sectors", ra, kernel)
	}
	rate = e.ddRate(pod.Name, e.lastDD(pod.Name)+1)
	t.Logf("direct writes in the pod with the cap removed: %.2f MiB/s", rate/(1<<20))
}

// vacWriter is a pod that writes 16 MiB with O_DIRECT to claim vac over and over, printing each
// run's bytes and its start and end uptime.
func vacWriter(name string) *corev1.Pod {
	pod := newPod(name, `i=0; while true; do i=$((i+1)); s=$(cut -d' ' -f1 /proc/uptime); `+
		`dd if=/dev/zero of=`+mountPath+`/f bs=1M count=16 oflag=direct 2>/dev/null || exit 1; `+
		`echo "dd $i: 16777216 bytes from $s to $(cut -d' ' -f1 /proc/uptime)"; sleep 1; done`)
	useClaim(pod, "vac", mountPath, "")
	return pod
}

// volumeAttributesClass creates a class of this driver with params, removed at the end.
func (e *env) volumeAttributesClass(name string, params map[string]string) string {
	e.t.Helper()
	vac := &storagev1.VolumeAttributesClass{
		// Generated: a class still held by a claim of an earlier run (vac-protection) keeps its name.
		ObjectMeta: metav1.ObjectMeta{GenerateName: e.ns + "-" + name + "-"},
		DriverName: driver.Name,
		Parameters: params,
	}
	if err := e.c.Create(e.ctx(), vac); err != nil {
		e.t.Fatalf("create VolumeAttributesClass %s: %v", vac.Name, err)
	}
	e.t.Cleanup(func() { _ = e.c.Delete(context.Background(), vac) })
	return vac.Name
}

// setClass changes claim's VolumeAttributesClass and waits until the claim reports it current.
func (e *env) setClass(claim, class string) {
	e.t.Helper()
	var pvc corev1.PersistentVolumeClaim
	if err := e.c.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: claim}, &pvc); err != nil {
		e.t.Fatal(err)
	}
	patch := client.MergeFrom(pvc.DeepCopy())
	pvc.Spec.VolumeAttributesClassName = &class
	if err := e.c.Patch(e.ctx(), &pvc, patch); err != nil {
		e.t.Fatalf("set the VolumeAttributesClass of %s: %v", claim, err)
	}
	e.waitFor("PVC "+claim+" in VolumeAttributesClass "+class, func(ctx context.Context) (bool, string, error) {
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: claim}, &pvc); err != nil {
			return false, "", err
		}
		cur := pvc.Status.CurrentVolumeAttributesClassName
		return cur != nil && *cur == class, fmt.Sprintf("current %v, modify status %+v",
			cur, pvc.Status.ModifyVolumeStatus), nil
	})
}

// readAhead returns lvm2's read-ahead of the LV of claim, as set (lv_read_ahead) and on the device
// (lv_kernel_read_ahead), in 512-byte sectors.
func (e *env) readAhead(claim string) (string, string) {
	e.t.Helper()
	_, lv := e.volumeOf(claim)
	out := e.onAgent(lv.Spec.NodeName, "lvs --noheadings --units s --nosuffix "+
		"-o lv_read_ahead,lv_kernel_read_ahead -S lv_name="+lv.Status.VolumeID)
	f := strings.Fields(out)
	if len(f) != 2 {
		e.t.Fatalf("lvs of LV %s on %s: %q", lv.Status.VolumeID, lv.Spec.NodeName, out)
	}
	return f[0], f[1]
}

// ioMax waits until the io.max of pod's cgroup on its node has a line containing want ("": none
// at all) and returns that line.
func (e *env) ioMax(pod *corev1.Pod, want string) string {
	e.t.Helper()
	script := fmt.Sprintf(`cat "$(find /sys/fs/cgroup -maxdepth 5 -type d -name '*pod%s*' | head -1)/io.max"`, pod.UID)
	var line string
	e.waitFor("io.max of pod "+pod.Name+" with "+strconv.Quote(want), func(context.Context) (bool, string, error) {
		out := strings.TrimSpace(e.onAgent(pod.Spec.NodeName, script))
		if want == "" {
			return out == "", out, nil // every entry removed
		}
		for l := range strings.SplitSeq(out, "\n") {
			if strings.Contains(l, want) {
				line = l
				return true, l, nil
			}
		}
		return false, out, nil
	})
	return line
}

// lastDD is the number of the pod's last dd run printed (0: none).
func (e *env) lastDD(name string) int {
	e.t.Helper()
	var pod corev1.Pod
	if err := e.c.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: name}, &pod); err != nil {
		e.t.Fatal(err)
	}
	last := 0
	for _, m := range ddCopied.FindAllStringSubmatch(e.output(&pod), -1) {
		last, _ = strconv.Atoi(m[1])
	}
	return last
}

// ddRate waits for the pod's dd run number n (one started after the change) and returns its bytes
// per second.
func (e *env) ddRate(name string, n int) float64 {
	e.t.Helper()
	var rate float64
	e.waitFor(fmt.Sprintf("dd run %d of pod %s", n, name), func(ctx context.Context) (bool, string, error) {
		var pod corev1.Pod
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &pod); err != nil {
			return false, "", err
		}
		out := e.output(&pod)
		for _, m := range ddCopied.FindAllStringSubmatch(out, -1) {
			if i, _ := strconv.Atoi(m[1]); i == n {
				bytes, _ := strconv.ParseFloat(m[2], 64)
				from, _ := strconv.ParseFloat(m[3], 64)
				to, _ := strconv.ParseFloat(m[4], 64)
				secs := to - from
				if secs <= 0 {
					return false, "", fmt.Errorf("dd %d took %.2f seconds", n, secs)
				}
				rate = bytes / secs
				return true, m[0], nil
			}
		}
		return false, out, nil
	})
	return rate
}
