package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// workload creates and deletes the claims and their pods.
type workload struct {
	cs  kubernetes.Interface
	dyn dynamic.Interface
	rec *recorder
	o   *options
	// nodes are the nodes the pods are pinned to, round robin (empty: the scheduler chooses).
	nodes []string
}

// claimName is the name of claim i; its pod and snapshot have the same name.
func claimName(i int) string { return fmt.Sprintf("bench-%04d", i) }

// forEach runs fn for claims 0..n-1 with at most o.concurrency at once and joins their errors.
func (w *workload) forEach(ctx context.Context, fn func(ctx context.Context, i int) error) error {
	return forRange(ctx, 0, w.o.claims, max(w.o.concurrency, 1), fn)
}

// forRange runs fn for each i in [from, to), at most limit at once, and joins their errors; once
// ctx ends it starts no more.
func forRange(ctx context.Context, from, to, limit int, fn func(ctx context.Context, i int) error) error {
	sem := make(chan struct{}, limit)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i := from; i < to; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait() // errs is complete only once the started calls are done
			return errors.Join(append(errs, context.Cause(ctx))...)
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// provision creates claim i and its pod and waits until the pod runs (and, with snapshots, until
// a VolumeSnapshot of the claim is ready).
func (w *workload) provision(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, w.o.claimTimeout)
	defer cancel()
	name := claimName(i)
	key := "claim/" + name
	w.rec.mark(key, mPVCCreate)
	if _, err := w.cs.CoreV1().PersistentVolumeClaims(w.o.namespace).Create(ctx, w.claim(name),
		metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create PVC %s: %w", name, err)
	}
	if _, err := w.cs.CoreV1().Pods(w.o.namespace).Create(ctx, w.pod(i), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pod %s: %w", name, err)
	}
	if err := w.rec.wait(ctx, key, mPodRunning); err != nil {
		return err
	}
	if !w.o.withSnapshots {
		return nil
	}
	w.rec.mark(key, mSnapCreate)
	if _, err := w.dyn.Resource(volumeSnapshotGVR).Namespace(w.o.namespace).Create(ctx, w.snapshot(name),
		metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create VolumeSnapshot %s: %w", name, err)
	}
	return w.rec.wait(ctx, key, mSnapReady)
}

// release deletes claim i: its snapshot and pod first (the claim is in use until the pod is gone),
// then the claim, and waits until its PV (and, for our driver, its LogicalVolume) is gone.
func (w *workload) release(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, w.o.claimTimeout)
	defer cancel()
	name := claimName(i)
	key := "claim/" + name
	if w.o.withSnapshots {
		err := w.dyn.Resource(volumeSnapshotGVR).Namespace(w.o.namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete VolumeSnapshot %s: %w", name, err)
		}
	}
	w.rec.mark(key, mPodDeleteSent)
	// A graceful delete: the pod object goes once the kubelet has stopped it and unmounted the
	// volume (a grace period of 0 would remove the object at once, before the volume is released).
	err := w.cs.CoreV1().Pods(w.o.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		w.rec.mark(key, mPodGone)
	case err != nil:
		return fmt.Errorf("delete pod %s: %w", name, err)
	}
	if err := w.rec.wait(ctx, key, mPodGone); err != nil {
		return err
	}
	pvc, err := w.cs.CoreV1().PersistentVolumeClaims(w.o.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get PVC %s: %w", name, err)
	}
	w.rec.mark(key, mDeleteStart)
	if err := w.cs.CoreV1().PersistentVolumeClaims(w.o.namespace).Delete(ctx, name,
		metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete PVC %s: %w", name, err)
	}
	pv := pvc.Spec.VolumeName
	if pv == "" {
		return nil
	}
	if err := w.rec.wait(ctx, "pv/"+pv, mPVGone); err != nil {
		return err
	}
	if w.o.logicalVolumes {
		return w.rec.wait(ctx, "lv/"+pv, mLVObjectGone)
	}
	return nil
}

// claim is the PVC of the benchmark.
func (w *workload) claim(name string) *corev1.PersistentVolumeClaim {
	mode := corev1.PersistentVolumeMode(w.o.volumeMode)
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{benchLabel: w.o.runID}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &w.o.storageClass,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:       &mode,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse(w.o.size)}},
		},
	}
}

// pod is claim i's pod: it mounts (or, for a Block claim, attaches) the claim and sleeps; SIGTERM
// ends it at once. With nodes it is pinned to one of them by required node affinity, which keeps
// the scheduler (and so the selected-node annotation of WaitForFirstConsumer) in the path, where
// spec.nodeName would bypass it and leave the claim unprovisioned.
func (w *workload) pod(i int) *corev1.Pod {
	name := claimName(i)
	c := corev1.Container{
		Name: "main", Image: w.o.image, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 86400 & wait"},
	}
	if w.o.volumeMode == string(corev1.PersistentVolumeBlock) {
		c.VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
	} else {
		c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{benchLabel: w.o.runID}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: new(int64(1)),
			Containers:                    []corev1.Container{c},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}},
		},
	}
	if len(w.nodes) > 0 {
		node := w.nodes[i%len(w.nodes)]
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}}}},
			}}}
	}
	return pod
}

// snapshot is the VolumeSnapshot of claim name in the class o.snapshotClass.
func (w *workload) snapshot(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "snapshot.storage.k8s.io/v1",
		"kind":       "VolumeSnapshot",
		"metadata":   map[string]any{"name": name, "labels": map[string]any{benchLabel: w.o.runID}},
		"spec": map[string]any{
			"volumeSnapshotClassName": w.o.snapshotClass,
			"source":                  map[string]any{"persistentVolumeClaimName": name},
		},
	}}
}

// pickNodes returns the first n Ready, schedulable nodes by name (n = 0: none, the scheduler
// chooses among all).
func pickNodes(ctx context.Context, cs kubernetes.Interface, n int) ([]string, error) {
	if n <= 0 {
		return nil, nil
	}
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var ready []string
	for _, node := range list.Items {
		if node.Spec.Unschedulable {
			continue
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = append(ready, node.Name)
			}
		}
	}
	slices.Sort(ready)
	if len(ready) < n {
		return nil, fmt.Errorf("--nodes %d: only %d nodes are Ready and schedulable (%v)", n, len(ready), ready)
	}
	return ready[:n], nil
}
