package evacuator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/mobility"
)

// moveOne moves one claim of the plan (number i of n) when its pods are stopped: it evicts them first
// and returns false without moving while an eviction is refused or the pods have not stopped yet.
func (e *Evacuator) moveOne(ctx context.Context, node string, p mobility.Evacuation, i, n int) (bool, error) {
	key := client.ObjectKey{Namespace: p.Namespace, Name: p.Claim}
	claim := &corev1.PersistentVolumeClaim{}
	err := e.c.Get(ctx, key, claim)
	if client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("read claim %s: %w", key, err)
	}
	controlled := false
	if err == nil { // else a move that deleted the claim is resumed: its pods are gone
		var waiting string
		if controlled, waiting, err = e.stopPods(ctx, claim); err != nil {
			return false, err
		}
		if waiting != "" {
			return false, e.report(ctx, node, corev1.EventTypeNormal, "EvacuationWaiting",
				"Waiting (%d/%d): claim %s: %s", i, n, key, waiting)
		}
	}
	if err := e.report(ctx, node, corev1.EventTypeNormal, "Moving", "Moving (%d/%d): claim %s to node %s",
		i, n, key, p.To); err != nil {
		return false, err
	}
	log := e.log.WithValues("node", node, "claim", key.String(), "to", p.To)
	err = mobility.RunMove(ctx, e.c, mobility.MoveOptions{Namespace: p.Namespace, Claim: p.Claim, To: p.To,
		Yes: true, Timeout: e.o.MoveTimeout, PollInterval: e.o.PollInterval}, lineLog{log: log})
	if err != nil {
		rerr := e.report(ctx, node, corev1.EventTypeWarning, "MoveFailed",
			"Failed (%d/%d): claim %s to node %s, retried in %s: %v", i, n, key, p.To, e.o.Resync, err)
		return false, fmt.Errorf("move claim %s: %w", key, errors.Join(err, rerr))
	}
	if controlled {
		e.waitReady(ctx, node, key)
	}
	return true, nil
}

// stopPods evicts the pods that use the claim and waits until they are gone. It returns whether one
// of them had a controller (which starts a replacement), and why the move must wait ("" when it need
// not): an eviction refused (by a PodDisruptionBudget) or pods still stopping.
func (e *Evacuator) stopPods(ctx context.Context, claim *corev1.PersistentVolumeClaim) (bool, string, error) {
	names, err := mobility.PodsUsing(ctx, e.c, claim)
	if err != nil || len(names) == 0 {
		return false, "", err
	}
	controlled := false
	for _, name := range names {
		pod := &corev1.Pod{}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: name}, pod); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return false, "", fmt.Errorf("read pod %s/%s: %w", claim.Namespace, name, err)
		}
		controlled = controlled || metav1.GetControllerOf(pod) != nil
		eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
		err := e.c.SubResource("eviction").Create(ctx, pod, eviction)
		switch {
		case apierrors.IsTooManyRequests(err):
			return controlled, fmt.Sprintf("the eviction of pod %s is refused: %v", pod.Name, err), nil
		case client.IgnoreNotFound(err) != nil:
			return false, "", fmt.Errorf("evict pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		e.log.Info("Evicted pod", "pod", pod.Namespace+"/"+pod.Name, "claim", claim.Name)
	}
	var left []string
	err = wait.PollUntilContextTimeout(ctx, e.o.PollInterval, e.o.StopTimeout, true,
		func(ctx context.Context) (bool, error) {
			left, err = mobility.PodsUsing(ctx, e.c, claim)
			return len(left) == 0, err
		})
	if len(left) > 0 {
		return controlled, fmt.Sprintf("evicted pods %s have not stopped yet", strings.Join(left, ", ")), nil
	}
	return controlled, "", err
}

// waitReady waits until a pod that uses the moved claim is Ready, so that the next move does not stop
// a second replica of an application before the first is back; after ReadyTimeout it goes on, saying so.
func (e *Evacuator) waitReady(ctx context.Context, node string, key client.ObjectKey) {
	err := wait.PollUntilContextTimeout(ctx, e.o.PollInterval, e.o.ReadyTimeout, true,
		func(ctx context.Context) (bool, error) {
			var pods corev1.PodList
			if err := e.c.List(ctx, &pods, client.InNamespace(key.Namespace)); err != nil {
				return false, nil //nolint:nilerr // a failed read is retried until the timeout
			}
			for i := range pods.Items {
				if mobility.UsesClaim(&pods.Items[i], key.Name) && podReady(&pods.Items[i]) {
					return true, nil
				}
			}
			return false, nil
		})
	if err != nil && ctx.Err() == nil {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
		e.rec.Eventf(n, nil, corev1.EventTypeWarning, "WorkloadNotReady", "Evacuate",
			"No pod using claim %s is Ready %s after its move; moving the next claim", key, e.o.ReadyTimeout)
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
