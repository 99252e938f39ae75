package claimevents

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Setup adds the controller to mgr: a cache of the Pods that are on no node yet, which the manager
// starts (on the leader, with the controller), and the controller recording events with a recorder
// of its own (newRecorder). Everything else is read from the manager's cache.
func Setup(mgr ctrl.Manager, opts Options) error {
	pods, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(),
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Field: fields.OneTermEqualSelector("spec.nodeName", "")},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		return fmt.Errorf("create cache of unscheduled Pods: %w", err)
	}
	if err := mgr.Add(pods); err != nil {
		return fmt.Errorf("add cache of unscheduled Pods: %w", err)
	}
	r := New(mgr.GetClient(), pods, nil, opts)
	if r.recorder, err = newRecorder(mgr, r.sent.forget); err != nil {
		return err
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("claimevents").
		WatchesRawSource(source.Kind(pods, &corev1.Pod{}, &handler.TypedEnqueueRequestForObject[*corev1.Pod]{},
			unschedulablePods())).
		Complete(r)
	if err != nil {
		return fmt.Errorf("build claim events controller: %w", err)
	}
	return nil
}

// unschedulablePods passes Pods the scheduler could not place that use claims; not deletions, which
// leave nothing to explain.
func unschedulablePods() predicate.TypedPredicate[*corev1.Pod] {
	return predicate.TypedFuncs[*corev1.Pod]{
		CreateFunc:  func(e event.TypedCreateEvent[*corev1.Pod]) bool { return waitingOnClaims(e.Object) },
		UpdateFunc:  func(e event.TypedUpdateEvent[*corev1.Pod]) bool { return waitingOnClaims(e.ObjectNew) },
		DeleteFunc:  func(event.TypedDeleteEvent[*corev1.Pod]) bool { return false },
		GenericFunc: func(e event.TypedGenericEvent[*corev1.Pod]) bool { return waitingOnClaims(e.Object) },
	}
}
