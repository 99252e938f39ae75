//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testClone clones a thin claim: the clone holds the source's data, lives on the source's node, and
// writing to it leaves the source alone. (A thick clone is a full copy: testThickSnapshots.)
func testClone(t *testing.T) {
	e := newEnv(t)
	e.claim("src", thinClass, "1Gi", false, "")
	e.pod("w-src", "src", false, "", writeScript)
	writer, _ := e.finished("w-src")

	clone := newClaim("clone", thinClass, "1Gi")
	clone.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
	e.create(clone)
	e.pod("r-clone", clone.Name, false, "", `set -e; echo "read=$(cat /data/f)"; echo clone-only > /data/f`)
	reader, out := e.finished("r-clone")
	if !strings.Contains(out, "read=e2e-data") {
		t.Fatalf("clone holds %q, want read=e2e-data", out)
	}
	if reader.Spec.NodeName != writer.Spec.NodeName {
		t.Fatalf("clone on %s, source on %s", reader.Spec.NodeName, writer.Spec.NodeName)
	}
	e.pod("check-src", "src", false, "", "cat /data/f")
	if _, out := e.finished("check-src"); strings.TrimSpace(out) != "e2e-data" {
		t.Fatalf("source holds %q after writing to the clone, want e2e-data", out)
	}
	srcPV, srcLV := e.volumeOf("src")
	clonePV, cloneLV := e.volumeOf(clone.Name)
	if srcPV.Spec.CSI.VolumeHandle == clonePV.Spec.CSI.VolumeHandle || cloneLV.Spec.Source != srcLV.Status.VolumeID {
		t.Fatalf("clone LogicalVolume %s has source %q, want the source's volume %s",
			cloneLV.Name, cloneLV.Spec.Source, srcLV.Status.VolumeID)
	}
}

// testGenericEphemeralVolume runs a pod with a generic ephemeral volume: its claim is created
// for the pod, provisioned and mounted, and deleting the pod deletes the claim and the LV.
func testGenericEphemeralVolume(t *testing.T) {
	e := newEnv(t)
	pod := newPod("eph", writeScript)
	tmpl := newClaim("", thinClass, "1Gi")
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: tmpl.Spec}}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: mountPath}}
	e.create(pod)
	done, out := e.finished("eph")
	if !strings.Contains(out, "read=e2e-data") || !strings.Contains(out, "fstype=xfs") {
		t.Fatalf("pod output %q: want read=e2e-data on xfs", out)
	}
	claim := "eph-scratch"
	pv, lv := e.volumeOf(claim)
	var pvc corev1.PersistentVolumeClaim
	if err := e.c.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: claim}, &pvc); err != nil {
		t.Fatal(err)
	}
	if owner := metav1.GetControllerOf(&pvc); owner == nil || owner.UID != done.UID {
		t.Fatalf("claim %s is not owned by pod eph: %v", claim, pvc.OwnerReferences)
	}
	if lvAttr(e.lvs(done.Spec.NodeName), pv.Spec.CSI.VolumeHandle) == "" {
		t.Fatalf("LV %s is not on node %s", pv.Spec.CSI.VolumeHandle, done.Spec.NodeName)
	}
	if err := e.c.Delete(e.ctx(), done); err != nil {
		t.Fatal(err)
	}
	e.waitGone(lv)
	if out := e.lvs(done.Spec.NodeName); lvAttr(out, pv.Spec.CSI.VolumeHandle) != "" {
		t.Fatalf(
			"LV %s is still on node %s after its pod was deleted:\n%s",
			pv.Spec.CSI.VolumeHandle,
			done.Spec.NodeName,
			out,
		)
	}
}

// testReadWriteOncePod: while one pod uses a ReadWriteOncePod claim, a second pod of that claim
// is not scheduled and says why; once the first is gone, the second runs and sees its data.
func testReadWriteOncePod(t *testing.T) {
	e := newEnv(t)
	pvc := newClaim("single", thinClass, "1Gi")
	pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
	e.create(pvc)
	e.pod(
		"first",
		"single",
		false,
		"",
		"echo first > /data/owner && sync && echo written; while true; do sleep 1; done",
	)
	first := e.running("first")
	e.waitOutput("first", "written")
	e.pod("second", "single", false, "", "cat /data/owner")
	e.waitEvent("second", "FailedScheduling", "ReadWriteOncePod")
	var second corev1.Pod
	if err := e.c.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: "second"}, &second); err != nil {
		t.Fatal(err)
	}
	if second.Spec.NodeName != "" || second.Status.Phase != corev1.PodPending {
		t.Fatalf(
			"second pod of a ReadWriteOncePod claim is %s on %q while the first runs",
			second.Status.Phase,
			second.Spec.NodeName,
		)
	}
	if err := e.c.Delete(e.ctx(), first); err != nil {
		t.Fatal(err)
	}
	if _, out := e.finished("second"); strings.TrimSpace(out) != "first" {
		t.Fatalf("second pod read %q, want first", out)
	}
}

// running waits until the pod is Running and returns it.
func (e *env) running(name string) *corev1.Pod {
	e.t.Helper()
	var pod corev1.Pod
	e.waitFor("pod "+name+" Running", func(ctx context.Context) (bool, string, error) {
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &pod); err != nil {
			return false, "", err
		}
		if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
			return false, "", fmt.Errorf("pod %s ended (%s): %s", name, pod.Status.Phase, e.output(&pod))
		}
		return pod.Status.Phase == corev1.PodRunning, string(pod.Status.Phase), nil
	})
	return &pod
}

// waitOutput waits until the output of the running pod (its log) contains substr.
func (e *env) waitOutput(name, substr string) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("pod %s to print %q", name, substr), func(ctx context.Context) (bool, string, error) {
		var pod corev1.Pod
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &pod); err != nil {
			return false, "", err
		}
		out := e.output(&pod)
		return strings.Contains(out, substr), fmt.Sprintf("phase %s, output %q", pod.Status.Phase, out), nil
	})
}

// waitEvent waits for an event of reason about the object name whose message contains substr.
func (e *env) waitEvent(name, reason, substr string) {
	e.t.Helper()
	if reason == "NotEnoughCapacity" {
		// The operator records it: what it logged says why it did not.
		defer e.onFailure(func() {
			logs, err := e.podLogs("lvms-operator", "operator")
			e.t.Logf(
				"operator log lines about claim events (err %v):\n%s",
				err,
				linesMatching(logs, "claimevents|event"),
			)
		})
	}
	e.waitFor(
		fmt.Sprintf("a %s event about %s mentioning %q", reason, name, substr),
		func(ctx context.Context) (bool, string, error) {
			var events corev1.EventList
			if err := e.c.List(ctx, &events, client.InNamespace(e.ns)); err != nil {
				return false, "", err
			}
			var seen []string
			for _, ev := range events.Items {
				if ev.InvolvedObject.Name != name {
					continue
				}
				seen = append(seen, ev.Reason+": "+ev.Message)
				if ev.Reason == reason && strings.Contains(ev.Message, substr) {
					e.t.Logf("%s event about %s: %s", reason, name, ev.Message)
					return true, "", nil
				}
			}
			return false, strings.Join(seen, "; "), nil
		},
	)
}

// waitGone waits until obj is deleted.
func (e *env) waitGone(obj client.Object) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("%T %s gone", obj, obj.GetName()), func(ctx context.Context) (bool, string, error) {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, fmt.Sprintf("finalizers %v", obj.GetFinalizers()), err
	})
}
