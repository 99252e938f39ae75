package kubelet

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

// watch runs the informers of the pods bound to the node and of all claims (for node expansion)
// until ctx ends.
func (k *Kubelet) watch(ctx context.Context) error {
	pods := informers.NewSharedInformerFactoryWithOptions(k.client, 0, informers.WithTweakListOptions(
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", k.cfg.NodeName).String()
		}))
	claims := informers.NewSharedInformerFactory(k.client, 0)
	_, err := pods.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.podChanged(ctx, obj) },
		UpdateFunc: func(_, obj any) { k.podChanged(ctx, obj) },
		DeleteFunc: func(obj any) { k.podGone(obj) },
	})
	if err != nil {
		return fmt.Errorf("add pod handler: %w", err)
	}
	_, err = claims.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.claimChanged(ctx, obj) },
		UpdateFunc: func(_, obj any) { k.claimChanged(ctx, obj) },
	})
	if err != nil {
		return fmt.Errorf("add claim handler: %w", err)
	}
	pods.Start(ctx.Done())
	claims.Start(ctx.Done())
	<-ctx.Done()
	pods.Shutdown()
	claims.Shutdown()
	return nil
}

// podChanged starts a worker for a pod of this node and tells it when the pod is being deleted.
func (k *Kubelet) podChanged(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != k.cfg.NodeName {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.finished[pod.UID] {
		return
	}
	w := k.workers[pod.UID]
	if w == nil {
		w = newPodWorker(ctx, k, pod)
		k.workers[pod.UID] = w
		log := ctrl.LoggerFrom(ctx).WithValues("pod", klog.KObj(pod), "podUID", pod.UID)
		go w.run(ctrl.LoggerInto(ctx, log))
	}
	w.update(pod)
	if pod.DeletionTimestamp != nil {
		w.markDeleted(false)
	}
}

// podGone tells the pod's worker that the object is gone.
func (k *Kubelet) podGone(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.finished, pod.UID)
	if w := k.workers[pod.UID]; w != nil {
		w.markDeleted(true)
	}
}

// workerDone forgets a worker whose pod was torn down; later events of that pod are ignored.
func (k *Kubelet) workerDone(uid types.UID, tornDown bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.workers, uid)
	if tornDown {
		k.finished[uid] = true
	}
}

// waitWorkers waits for every worker to return.
func (k *Kubelet) waitWorkers() {
	k.mu.Lock()
	ws := make([]*podWorker, 0, len(k.workers))
	for _, w := range k.workers {
		ws = append(ws, w)
	}
	k.mu.Unlock()
	for _, w := range ws {
		<-w.done
	}
}

// podWorker drives one pod from Pending to its end and tears it down on deletion.
type podWorker struct {
	k   *Kubelet
	uid types.UID
	// life ends when the pod is deleted or the kubelet stops.
	life   context.Context //nolint:containedctx // the pod's lifetime, cancelled by informer events
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	pod     *corev1.Pod
	deleted bool
	gone    bool
}

func newPodWorker(ctx context.Context, k *Kubelet, pod *corev1.Pod) *podWorker {
	life, cancel := context.WithCancel(ctx)
	return &podWorker{k: k, uid: pod.UID, life: life, cancel: cancel, done: make(chan struct{}), pod: pod}
}

func (w *podWorker) update(pod *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pod = pod
}

func (w *podWorker) latest() *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

// markDeleted ends the pod's life; gone means the object no longer exists.
func (w *podWorker) markDeleted(gone bool) {
	w.mu.Lock()
	w.deleted = true
	w.gone = w.gone || gone
	w.mu.Unlock()
	w.cancel()
}

func (w *podWorker) state() (deleted, gone bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.deleted, w.gone
}

// run is the worker's goroutine.
func (w *podWorker) run(ctx context.Context) {
	defer close(w.done)
	log := ctrl.LoggerFrom(ctx)
	pod := w.latest()
	switch {
	case isDaemonSetPod(pod):
		w.runDaemonSetPod(ctx)
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		// Finished before (a restart of this kubelet): never run again.
	default:
		w.runPod(ctx)
		if err := w.k.volumes.Teardown(ctx, w.uid); err != nil && ctx.Err() == nil {
			log.Error(err, "Unpublishing the volumes of a finished pod failed; retried on deletion")
		}
	}
	<-w.life.Done()
	deleted, gone := w.state()
	if !deleted || ctx.Err() != nil {
		w.k.workerDone(w.uid, false)
		return
	}
	err := w.teardown(ctx, gone)
	if err != nil && ctx.Err() == nil {
		log.Error(err, "Pod teardown failed")
	}
	w.k.workerDone(w.uid, err == nil)
}

// teardown unpublishes the pod's volumes, then deletes the object with grace period 0, as kubelet
// does once the containers are gone.
func (w *podWorker) teardown(ctx context.Context, gone bool) error {
	log := ctrl.LoggerFrom(ctx)
	if err := retryUntil(ctx, w.k.clock, func() error { return w.k.volumes.Teardown(ctx, w.uid) }); err != nil {
		return err
	}
	log.Info("Pod volumes torn down")
	if gone {
		return nil
	}
	pod := w.latest()
	err := w.k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64), Preconditions: metav1.NewUIDPreconditions(string(w.uid))})
	if err != nil && !isNotFoundOrConflict(err) {
		return fmt.Errorf("delete pod: %w", err)
	}
	log.Info("Pod deleted")
	return nil
}

// runDaemonSetPod reports a DaemonSet pod Running without running anything: on a dev-cluster node
// the node agent runs beside the kubelet as a process.
func (w *podWorker) runDaemonSetPod(ctx context.Context) {
	now := w.k.clock.Now()
	err := retryUntil(w.life, w.k.clock, func() error {
		return w.k.setPodStatus(w.life, w.latest(), runState{phase: corev1.PodRunning, started: now, allReady: true})
	})
	if err != nil && w.life.Err() == nil {
		ctrl.LoggerFrom(ctx).Error(err, "DaemonSet pod status update failed")
	}
}

// isDaemonSetPod reports whether a DaemonSet controls the pod.
func isDaemonSetPod(pod *corev1.Pod) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.Kind == "DaemonSet"
}
