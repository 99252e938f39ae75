package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// selectedNodeAnnotation is set on a WaitForFirstConsumer claim by the scheduler.
const selectedNodeAnnotation = "volume.kubernetes.io/selected-node"

var (
	logicalVolumeGVR  = schema.GroupVersionResource{Group: "topolvm.io", Version: "v1", Resource: "logicalvolumes"}
	volumeSnapshotGVR = schema.GroupVersionResource{
		Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}
)

// recorder notes when the benchmark's watches first see each milestone. Keys are "claim/<name>"
// for PVC, pod and snapshot milestones (pod and snapshot share the claim's name), "pv/<name>" for
// the PV's and "lv/<CSI volume name>" for the LogicalVolume's; the CSI volume name is the PV's
// name, so report joins them through the claim's volume name.
type recorder struct {
	mu      sync.Mutex
	marks   map[string]map[string]time.Time
	waiters map[string]chan struct{}
	nodes   map[string]string // claim → node
	volumes map[string]string // claim → PV name
	// failed is the count of each ProvisioningFailed event (by event name) and failMsg its message.
	failed  map[string]int32
	failMsg map[string]string
	failUID map[string]types.UID
	// runID is the value of benchLabel on this run's objects; claimUIDs are this run's PVCs.
	runID     string
	claimUIDs map[types.UID]bool
	now       func() time.Time
}

func newRecorder(runID string) *recorder {
	return &recorder{
		marks: map[string]map[string]time.Time{}, waiters: map[string]chan struct{}{},
		nodes: map[string]string{}, volumes: map[string]string{}, now: time.Now,
		failed: map[string]int32{}, failMsg: map[string]string{}, failUID: map[string]types.UID{},
		runID: runID, claimUIDs: map[types.UID]bool{},
	}
}

// mark records milestone m of key the first time it is seen and wakes its waiters.
func (r *recorder) mark(key, m string) {
	r.markAt(key, m, r.now())
}

func (r *recorder) markAt(key, m string, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ms := r.marks[key]
	if ms == nil {
		ms = map[string]time.Time{}
		r.marks[key] = ms
	}
	if _, ok := ms[m]; ok {
		return
	}
	ms[m] = t
	if ch, ok := r.waiters[key+"#"+m]; ok {
		close(ch)
	} else {
		ch := make(chan struct{})
		close(ch)
		r.waiters[key+"#"+m] = ch
	}
}

// wait blocks until milestone m of key is recorded or ctx ends.
func (r *recorder) wait(ctx context.Context, key, m string) error {
	r.mu.Lock()
	ch, ok := r.waiters[key+"#"+m]
	if !ok {
		ch = make(chan struct{})
		r.waiters[key+"#"+m] = ch
	}
	r.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for %s of %s: %w", m, key, context.Cause(ctx))
	}
}

// claims joins the milestones of each claim with those of its PV and LogicalVolume.
func (r *recorder) claims(names []string) []claimTimes {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]claimTimes, 0, len(names))
	for _, n := range names {
		c := claimTimes{Claim: n, Node: r.nodes[n], Volume: r.volumes[n], Milestones: map[string]time.Time{}}
		for _, key := range []string{"claim/" + n, "pv/" + c.Volume, "lv/" + c.Volume} {
			for m, t := range r.marks[key] {
				c.Milestones[m] = t
			}
		}
		out = append(out, c)
	}
	return out
}

// failures returns how many ProvisioningFailed events occurred and their messages.
func (r *recorder) failures() (int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	msgs := make([]string, 0, len(r.failMsg))
	for name, c := range r.failed {
		if !r.claimUIDs[r.failUID[name]] {
			continue // an event of an earlier run's claim of the same name
		}
		n += int(c)
		msgs = append(msgs, fmt.Sprintf("%s (×%d)", r.failMsg[name], c))
	}
	slices.Sort(msgs)
	return n, msgs
}

// watchOptions say what the recorder watches besides PVCs, pods, events and PVs.
type watchOptions struct {
	namespace string
	// logicalVolumes: the driver keeps topolvm.io/v1 LogicalVolumes (lvms or TopoLVM).
	logicalVolumes bool
	// snapshots: VolumeSnapshots are taken.
	snapshots bool
}

// watch starts the informers of the benchmark's namespace (PVCs, pods, events, VolumeSnapshots),
// of PVs and of LogicalVolumes, and waits for their caches.
func (r *recorder) watch(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, o watchOptions) error {
	ns := o.namespace
	nsf := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	all := informers.NewSharedInformerFactory(cs, 0)
	dynf := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	lvf := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	add := func(inf cache.SharedIndexInformer, h cache.ResourceEventHandlerFuncs) error {
		if _, err := inf.AddEventHandler(h); err != nil {
			return fmt.Errorf("add an event handler: %w", err)
		}
		return nil
	}
	err := add(nsf.Core().V1().PersistentVolumeClaims().Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: r.onClaim, UpdateFunc: func(_, o any) { r.onClaim(o) }})
	if err == nil {
		err = add(nsf.Core().V1().Pods().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: r.onPod, UpdateFunc: func(_, o any) { r.onPod(o) }, DeleteFunc: r.onPodDelete})
	}
	if err == nil {
		err = add(nsf.Core().V1().Events().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: r.onEvent, UpdateFunc: func(_, o any) { r.onEvent(o) }})
	}
	if err == nil {
		err = add(all.Core().V1().PersistentVolumes().Informer(), cache.ResourceEventHandlerFuncs{
			DeleteFunc: func(o any) { r.onGone(o, "pv/", mPVGone) }})
	}
	if err == nil && o.snapshots {
		err = add(dynf.ForResource(volumeSnapshotGVR).Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: r.onSnapshot, UpdateFunc: func(_, o any) { r.onSnapshot(o) }})
	}
	if err == nil && o.logicalVolumes {
		err = add(lvf.ForResource(logicalVolumeGVR).Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: r.onLV, UpdateFunc: func(_, o any) { r.onLV(o) }, DeleteFunc: r.onLVDelete})
	}
	if err != nil {
		return err
	}
	for _, f := range []interface {
		Start(<-chan struct{})
		WaitForCacheSync(<-chan struct{}) map[schema.GroupVersionResource]bool
	}{dynf, lvf} {
		f.Start(ctx.Done())
		for gvr, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("the cache of %s did not sync", gvr.Resource)
			}
		}
	}
	for _, f := range []informers.SharedInformerFactory{nsf, all} {
		f.Start(ctx.Done())
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("the cache of %v did not sync", typ)
			}
		}
	}
	return nil
}

func (r *recorder) onClaim(o any) {
	pvc, ok := o.(*corev1.PersistentVolumeClaim)
	if !ok || pvc.Labels[benchLabel] != r.runID {
		return
	}
	r.mu.Lock()
	r.claimUIDs[pvc.UID] = true
	r.mu.Unlock()
	key := "claim/" + pvc.Name
	if node := pvc.Annotations[selectedNodeAnnotation]; node != "" {
		r.mark(key, mSelectedNode)
	}
	if pvc.Status.Phase == corev1.ClaimBound {
		r.mu.Lock()
		r.volumes[pvc.Name] = pvc.Spec.VolumeName
		r.mu.Unlock()
		r.mark(key, mBound)
	}
}

func (r *recorder) onPod(o any) {
	pod, ok := o.(*corev1.Pod)
	if !ok || pod.Labels[benchLabel] != r.runID || pod.Status.Phase != corev1.PodRunning {
		return
	}
	r.mu.Lock()
	r.nodes[pod.Name] = pod.Spec.NodeName
	r.mu.Unlock()
	r.mark("claim/"+pod.Name, mPodRunning)
}

func (r *recorder) onPodDelete(o any) { r.onGone(o, "claim/", mPodGone) }

// onGone marks m for the deleted object (prefix + its name).
func (r *recorder) onGone(o any, prefix, m string) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	if obj, ok := o.(interface{ GetName() string }); ok {
		r.mark(prefix+obj.GetName(), m)
	}
}

func (r *recorder) onEvent(o any) {
	ev, ok := o.(*corev1.Event)
	if !ok || ev.Reason != "ProvisioningFailed" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// A repeated event is one object with a growing count (series.count for events.k8s.io
	// events): keep the highest count seen per event.
	n := max(ev.Count, 1)
	if ev.Series != nil {
		n = max(n, ev.Series.Count)
	}
	r.failed[ev.Name] = max(r.failed[ev.Name], n)
	r.failMsg[ev.Name] = ev.InvolvedObject.Name + ": " + ev.Message
	r.failUID[ev.Name] = ev.InvolvedObject.UID
}

func (r *recorder) onSnapshot(o any) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok || u.GetLabels()[benchLabel] != r.runID {
		return
	}
	if ready, _, _ := unstructured.NestedBool(u.Object, "status", "readyToUse"); ready {
		r.mark("claim/"+u.GetName(), mSnapReady)
	}
}

func (r *recorder) onLV(o any) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	name, _, _ := unstructured.NestedString(u.Object, "spec", "name")
	if name == "" {
		return
	}
	r.mark("lv/"+name, mLVObject)
	if id, _, _ := unstructured.NestedString(u.Object, "status", "volumeID"); id != "" {
		r.mark("lv/"+name, mLVCreated)
	}
	if u.GetDeletionTimestamp() != nil {
		r.mark("lv/"+name, mLVDeleting)
	}
}

func (r *recorder) onLVDelete(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	if u, ok := o.(*unstructured.Unstructured); ok {
		if name, _, _ := unstructured.NestedString(u.Object, "spec", "name"); name != "" {
			r.mark("lv/"+name, mLVObjectGone)
		}
	}
}
