package claimevents

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/placement"
)

// Event reason and action of the claim events.
const (
	// ReasonNotEnoughCapacity: no node's device class can hold the claim's request.
	ReasonNotEnoughCapacity = "NotEnoughCapacity"
	// ActionProvision is the action that cannot happen.
	ActionProvision = "Provision"
)

// defaultRecheck is how often an unschedulable Pod's claims are looked at again.
const defaultRecheck = time.Minute

// Options configure the controller.
type Options struct {
	// Namespace is the operator namespace, which holds the LVMCluster and the node statuses.
	Namespace string
	// Recheck is how long an unschedulable Pod waits before its claims are looked at again
	// (default one minute).
	Recheck time.Duration
	// MaxRemembered bounds the claims whose last note is kept to suppress repeats (default 10000).
	MaxRemembered int
}

// The controller watches the Pods no node runs yet and explains their claims from StorageClasses,
// Nodes, node statuses and the LVMCluster, in events on the claims.
// +kubebuilder:rbac:groups="",resources=pods;persistentvolumeclaims;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=lvm.topolvm.io,resources=lvmclusters;lvmvolumegroupnodestatuses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler records NotEnoughCapacity events on the claims of unschedulable Pods.
type Reconciler struct {
	// client reads claims, StorageClasses, Nodes, node statuses and LVMClusters.
	client client.Reader
	// pods reads the Pods the controller watches.
	pods     client.Reader
	recorder events.EventRecorder
	opts     Options
	sent     *lastNotes
	now      func() time.Time
}

// New returns the controller; pods must hold the Pods that the watch delivers.
func New(c, pods client.Reader, recorder events.EventRecorder, opts Options) *Reconciler {
	if opts.Recheck <= 0 {
		opts.Recheck = defaultRecheck
	}
	if opts.MaxRemembered <= 0 {
		opts.MaxRemembered = defaultMaxRemembered
	}
	return &Reconciler{
		client: c, pods: pods, recorder: recorder, opts: opts, sent: newLastNotes(opts.MaxRemembered), now: time.Now,
	}
}

// Reconcile looks at the claims of one Pod that the scheduler could not place.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pod corev1.Pod
	if err := r.pods.Get(ctx, req.NamespacedName, &pod); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil // deleted, or placed on a node
		}
		return ctrl.Result{}, fmt.Errorf("get Pod %s: %w", req.NamespacedName, err)
	}
	if !waitingOnClaims(&pod) {
		return ctrl.Result{}, nil
	}
	ours := false
	var errs []error
	for _, name := range claimNames(&pod) {
		waiting, err := r.checkClaim(ctx, &pod, name)
		ours = ours || waiting
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	if !ours {
		return ctrl.Result{}, nil
	}
	// Free space changes on Nodes and node statuses, which trigger nothing here: look again while the
	// Pod waits.
	return ctrl.Result{RequeueAfter: r.opts.Recheck}, nil
}

// checkClaim records the event of one claim of pod if no node can hold it. It tells whether the claim
// is worth another look later: a Pending claim of this driver, or one not found (yet).
func (r *Reconciler) checkClaim(ctx context.Context, pod *corev1.Pod, name string) (bool, error) {
	key := client.ObjectKey{Namespace: pod.Namespace, Name: name}
	var pvc corev1.PersistentVolumeClaim
	if err := r.client.Get(ctx, key, &pvc); err != nil {
		if apierrors.IsNotFound(err) {
			// Missing, or not in the cache yet: the scheduler's event on the Pod says when it is
			// missing, and a look later explains it once it is there.
			return true, nil
		}
		return false, fmt.Errorf("get PersistentVolumeClaim %s: %w", key, err)
	}
	if pvc.Status.Phase != corev1.ClaimPending {
		r.sent.forget(pvc.UID)
		return false, nil
	}
	if isEphemeral(pod, name) && ephemeral.VolumeIsForPod(pod, &pvc) != nil {
		return false, nil // another Pod's claim under this Pod's name; the scheduler reports that
	}
	report, err := placement.Explain(ctx, r.client, r.opts.Namespace, &pvc)
	if err != nil {
		return false, fmt.Errorf("explain PersistentVolumeClaim %s: %w", key, err)
	}
	if report.Provisioner != driver.Name {
		return false, nil
	}
	if !report.NoNodeFits() {
		r.sent.fitted(pvc.UID, r.now())
		return true, nil
	}
	note := placement.CapacityMessage(report)
	if r.sent.record(pvc.UID, note, r.now()) {
		ctrl.LoggerFrom(ctx).V(1).Info("No node can hold the claim", "PersistentVolumeClaim", klog.KObj(&pvc),
			"note", note)
		r.recorder.Eventf(&pvc, pod, corev1.EventTypeWarning, ReasonNotEnoughCapacity, ActionProvision, "%s", note)
	}
	return true, nil
}

// waitingOnClaims tells that the scheduler could not place pod and pod uses claims.
func waitingOnClaims(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || !pod.DeletionTimestamp.IsZero() || len(claimNames(pod)) == 0 {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// claimNames are the PersistentVolumeClaims pod uses, its generic ephemeral volumes' included.
func claimNames(pod *corev1.Pod) []string {
	var names []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			names = append(names, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			names = append(names, ephemeral.VolumeClaimName(pod, v))
		}
	}
	return names
}

// isEphemeral tells that claim name is the claim of one of pod's generic ephemeral volumes.
func isEphemeral(pod *corev1.Pod, name string) bool {
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.Ephemeral != nil && ephemeral.VolumeClaimName(pod, v) == name {
			return true
		}
	}
	return false
}
