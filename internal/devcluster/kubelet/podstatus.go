package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
)

// notRunReason is the waiting reason of every container but the first.
const notRunReason = "NotRunByDevKubelet"

// exitInfo is one finished run of the process.
type exitInfo struct {
	code              int32
	started, finished time.Time
	// message is a start or wait failure; tail the last lines of output.
	message, tail string
}

// runState is what the worker knows about the pod's process.
type runState struct {
	phase corev1.PodPhase
	// reason and message explain a waiting container (ContainerCreating, CrashLoopBackOff).
	reason, message string
	// started is set while the process runs.
	started  time.Time
	restarts int32
	// exit is the final run of a finished pod, last the previous run of a restarted one.
	exit, last *exitInfo
	// allReady reports every container running (DaemonSet pods).
	allReady bool
}

// running reports whether the first container runs now.
func (s runState) running() bool { return s.phase == corev1.PodRunning && s.reason == "" }

// podStatus builds the pod status kubelet would report for st, keeping the start time and the
// transition times of unchanged conditions from old.
func podStatus(pod *corev1.Pod, old corev1.PodStatus, st runState, now metav1.Time) corev1.PodStatus {
	out := corev1.PodStatus{Phase: st.phase, HostIP: loopbackIP, HostIPs: []corev1.HostIP{{IP: loopbackIP}},
		StartTime: old.StartTime, QOSClass: old.QOSClass}
	if out.StartTime == nil {
		out.StartTime = &now
	}
	if st.phase != corev1.PodPending {
		out.PodIP, out.PodIPs = loopbackIP, []corev1.PodIP{{IP: loopbackIP}}
	}
	if st.phase == corev1.PodPending && st.message != "" {
		out.Message = st.message
	}
	ready, volumesReady := st.running(), st.phase != corev1.PodPending
	readyReason := ""
	if st.phase == corev1.PodSucceeded || st.phase == corev1.PodFailed {
		readyReason = "PodCompleted"
	}
	conds := []struct {
		t      corev1.PodConditionType
		ok     bool
		reason string
	}{
		{corev1.PodReadyToStartContainers, volumesReady, ""},
		{corev1.PodInitialized, true, ""},
		{corev1.ContainersReady, ready, readyReason},
		{corev1.PodReady, ready, readyReason},
		{corev1.PodScheduled, true, ""},
	}
	for _, c := range conds {
		s := corev1.ConditionFalse
		if c.ok {
			s = corev1.ConditionTrue
		}
		pc := corev1.PodCondition{Type: c.t, Status: s, Reason: c.reason, LastTransitionTime: now}
		for _, o := range old.Conditions {
			if o.Type == c.t && o.Status == s {
				pc.LastTransitionTime = o.LastTransitionTime
			}
		}
		out.Conditions = append(out.Conditions, pc)
	}
	for i, c := range pod.Spec.Containers {
		out.ContainerStatuses = append(out.ContainerStatuses, containerStatus(c, i == 0 || st.allReady, st))
	}
	return out
}

// containerStatus reports one container; only the first (or all, for DaemonSet pods) follows st.
func containerStatus(c corev1.Container, follows bool, st runState) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, RestartCount: st.restarts}
	if !follows {
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: notRunReason,
			Message: "the dev kubelet runs the first container only"}
		return cs
	}
	started := st.running()
	cs.Ready, cs.Started = started, &started
	switch {
	case started:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(st.started)}
	case st.exit != nil:
		cs.State.Terminated = terminated(st.exit)
	default:
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: st.reason, Message: st.message}
	}
	if st.last != nil {
		cs.LastTerminationState.Terminated = terminated(st.last)
	}
	return cs
}

func terminated(e *exitInfo) *corev1.ContainerStateTerminated {
	reason, msg := "Completed", e.tail
	if e.code != 0 {
		reason = "Error"
	}
	if e.message != "" {
		reason, msg = "StartError", e.message
	}
	return &corev1.ContainerStateTerminated{ExitCode: e.code, Reason: reason, Message: msg,
		StartedAt: metav1.NewTime(e.started), FinishedAt: metav1.NewTime(e.finished)}
}

// setPodStatus writes the status of st to the pod's status subresource.
func (k *Kubelet) setPodStatus(ctx context.Context, pod *corev1.Pod, st runState) error {
	pods := k.client.CoreV1().Pods(pod.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID {
			return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
		}
		cur.Status = podStatus(cur, cur.Status, st, metav1.NewTime(k.clock.Now()))
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("update status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// annotateTail records the last lines of output in the pod's log-tail annotation.
func (k *Kubelet) annotateTail(ctx context.Context, pod *corev1.Pod, tail string) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": pod.UID, "annotations": map[string]string{LogTailAnnotation: tail}}})
	if err == nil {
		_, err = k.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: FieldManager})
	}
	if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
		ctrl.LoggerFrom(ctx).Error(err, "Log tail annotation failed")
	}
}

// tailFile returns the last n lines of the file (at most its last 4 KiB); "" when unreadable.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close() //nolint:errcheck // read-only
	const window = 4096
	if st, err := f.Stat(); err == nil && st.Size() > window {
		if _, err := f.Seek(st.Size()-window, io.SeekStart); err != nil {
			return ""
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	return lastLines(string(b), n)
}

// lastLines returns the last n lines of s, without a trailing newline.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// isNotFoundOrConflict reports errors of a delete whose object is gone or was replaced.
func isNotFoundOrConflict(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsConflict(err)
}
