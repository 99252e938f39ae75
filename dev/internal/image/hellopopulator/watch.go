package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// workers sync claims side by side; the suite fills one claim at a time.
const workers = 2

// runController watches claims, the populate pods and the Hellos, and syncs the claims their
// events lead to until ctx ends.
func runController(ctx context.Context, o options) error {
	if o.image == "" || o.namespace == "" {
		return errors.New("controller mode needs --image-name and --namespace")
	}
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	ctx = klog.NewContext(ctx, klog.Background().WithName("hello-populator"))
	if o.httpEndpoint != "" {
		if err := serveHealth(ctx, o.httpEndpoint); err != nil {
			return err
		}
	}
	c, err := newController(&populator{kube: kube, dynamic: dyn, namespace: o.namespace, image: o.image})
	if err != nil {
		return err
	}
	return c.run(ctx)
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("in-cluster config (or --kubeconfig): %w", err)
	}
	return cfg, nil
}

// serveHealth answers /healthz on addr until ctx ends.
func serveHealth(ctx context.Context, addr string) error {
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("http endpoint: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "The HTTP endpoint stopped", "address", addr)
		}
	}()
	return nil
}

// controller turns the events of claims (every namespace), of the populator's pods and of the
// Hellos into the claims to sync.
type controller struct {
	p     *populator
	queue workqueue.TypedRateLimitingInterface[claimKey]
	// claims lists the claims of a namespace, for the ones a Hello is the data source of.
	claims corelisters.PersistentVolumeClaimLister
	synced []cache.InformerSynced
	start  []func(stop <-chan struct{})
}

func newController(p *populator) (*controller, error) {
	c := &controller{p: p, queue: workqueue.NewTypedRateLimitingQueue(
		// Retries of a failed sync: from 100 ms, doubling, at most every 30 s.
		workqueue.NewTypedItemExponentialFailureRateLimiter[claimKey](100*time.Millisecond, 30*time.Second),
	)}
	all := informers.NewSharedInformerFactory(p.kube, 0)
	own := informers.NewSharedInformerFactoryWithOptions(p.kube, 0, informers.WithNamespace(p.namespace))
	hellos := dynamicinformer.NewDynamicSharedInformerFactory(p.dynamic, 0)
	claims := all.Core().V1().PersistentVolumeClaims()
	c.claims = claims.Lister()
	for _, w := range []struct {
		informer cache.SharedIndexInformer
		keys     func(any) []claimKey
	}{
		{claims.Informer(), c.claimKeys},
		{own.Core().V1().Pods().Informer(), ownerKeys},
		{hellos.ForResource(helloGVR).Informer(), c.helloKeys},
	} {
		if _, err := w.informer.AddEventHandler(c.handler(w.keys)); err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
		c.synced = append(c.synced, w.informer.HasSynced)
	}
	c.start = []func(<-chan struct{}){all.Start, own.Start, hellos.Start}
	return c, nil
}

// handler queues the claims keys names for every added, updated or deleted object.
func (c *controller) handler(keys func(any) []claimKey) cache.ResourceEventHandler {
	add := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		for _, k := range keys(obj) {
			c.queue.Add(k)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }, DeleteFunc: add}
}

// claimKeys: a claim of the populator's namespace leads to the claim it is the prime claim of,
// any other claim whose data source is a Hello to itself.
func (c *controller) claimKeys(obj any) []claimKey {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	switch {
	case !ok:
		return nil
	case pvc.Namespace == c.p.namespace:
		return ownerKeys(pvc)
	case isHelloClaim(pvc):
		return []claimKey{{namespace: pvc.Namespace, name: pvc.Name, uid: pvc.UID}}
	}
	return nil
}

// ownerKeys is the claim a prime claim or a pod was made for (annClaim, annClaimUID).
func ownerKeys(obj any) []claimKey {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil
	}
	ns, name, ok := strings.Cut(o.GetAnnotations()[annClaim], "/")
	uid := o.GetAnnotations()[annClaimUID]
	if !ok || uid == "" {
		return nil
	}
	return []claimKey{{namespace: ns, name: name, uid: types.UID(uid)}}
}

// helloKeys are the claims of a Hello's namespace whose data source it is.
func (c *controller) helloKeys(obj any) []claimKey {
	h, ok := obj.(metav1.Object)
	if !ok || h.GetNamespace() == c.p.namespace {
		return nil
	}
	claims, err := c.claims.PersistentVolumeClaims(h.GetNamespace()).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []claimKey
	for _, pvc := range claims {
		if isHelloClaim(pvc) && pvc.Spec.DataSourceRef.Name == h.GetName() {
			keys = append(keys, claimKey{namespace: pvc.Namespace, name: pvc.Name, uid: pvc.UID})
		}
	}
	return keys
}

// run starts the informers and the workers and returns when ctx ends.
func (c *controller) run(ctx context.Context) error {
	defer c.queue.ShutDown()
	for _, start := range c.start {
		start(ctx.Done())
	}
	log := klog.FromContext(ctx)
	log.Info("Waiting for the watches to sync", "namespace", c.p.namespace, "image", c.p.image)
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("watches not synced: %w", context.Cause(ctx))
	}
	log.Info("Populating claims whose data source is a Hello")
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// next syncs the next claim of the queue, again later when it failed; false when the queue is shut
// down.
func (c *controller) next(ctx context.Context) bool {
	k, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(k)
	log := klog.FromContext(ctx).WithValues("claim", klog.KRef(k.namespace, k.name), "uid", k.uid)
	if err := c.p.sync(klog.NewContext(ctx, log), k); err != nil {
		log.Error(err, "Sync failed, retrying")
		c.queue.AddRateLimited(k)
		return true
	}
	c.queue.Forget(k)
	return true
}
