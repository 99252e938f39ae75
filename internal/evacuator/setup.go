package evacuator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Setup adds an Evacuator to mgr: it acts through a client that reads the API server directly (a move
// polls a handful of objects), finds triggered nodes in the manager's cache of node metadata, and is
// woken when a node gains a trigger.
func Setup(ctx context.Context, mgr manager.Manager, o Options) (*Evacuator, error) {
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	e := New(c, mgr.GetClient(), mgr.GetEventRecorder("lvms-evacuator"), ctrl.Log.WithName("evacuator"), o)
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	inf, err := mgr.GetCache().GetInformer(ctx, meta)
	if err != nil {
		return nil, fmt.Errorf("node informer: %w", err)
	}
	wake := func(obj any) {
		if m, ok := obj.(metav1.Object); ok && e.Triggered(m) {
			e.Wake()
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    wake,
		UpdateFunc: func(_, obj any) { wake(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watch nodes: %w", err)
	}
	if err := mgr.Add(e); err != nil {
		return nil, fmt.Errorf("add the evacuator: %w", err)
	}
	return e, nil
}
