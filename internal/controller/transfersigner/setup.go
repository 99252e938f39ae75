package transfersigner

import (
	"context"
	"errors"
	"fmt"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

// Options configure the signer.
type Options struct {
	// Namespace is the operator namespace: it holds the authority Secret, the trust ConfigMap and
	// the node agent's service account.
	Namespace string
	// NodeServiceAccount is the node agent's service account in Namespace, the one requester whose
	// requests are signed.
	NodeServiceAccount string
	// FieldOwner is the field manager of the authority Secret and the trust ConfigMap.
	FieldOwner string
}

// Setup reads the authority (making it when missing: Ensure) and adds to mgr the signer, the
// publisher of the trust ConfigMap, and a cache of their own that holds only the requests of
// transfer.SignerName and the trust ConfigMap. Both controllers run on the leader. It returns the
// authority (whose token key the operator signs transfer tokens with).
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) (*transfer.Authority, error) {
	if o.Namespace == "" || o.NodeServiceAccount == "" || o.FieldOwner == "" {
		return nil, errors.New("transfer signer: Namespace, NodeServiceAccount and FieldOwner are required")
	}
	authority, err := Ensure(ctx, mgr.GetAPIReader(), mgr.GetClient(), o.Namespace, o.FieldOwner)
	if err != nil {
		return nil, err
	}
	objects, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(),
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&certv1.CertificateSigningRequest{}: {Field: fields.OneTermEqualSelector("spec.signerName",
				transfer.SignerName)},
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{o.Namespace: {}},
				Field: fields.OneTermEqualSelector("metadata.name", transfer.TrustConfigMap)},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("create the transfer signer's cache: %w", err)
	}
	if err := mgr.Add(objects); err != nil {
		return nil, fmt.Errorf("add the transfer signer's cache: %w", err)
	}
	signer := &Signer{csrs: objects, client: mgr.GetClient(), authority: authority, now: time.Now,
		requester: fmt.Sprintf("system:serviceaccount:%s:%s", o.Namespace, o.NodeServiceAccount)}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("transfersigner").
		WatchesRawSource(source.Kind(objects, &certv1.CertificateSigningRequest{},
			&handler.TypedEnqueueRequestForObject[*certv1.CertificateSigningRequest]{}, ofSigner())).
		Complete(signer)
	if err != nil {
		return nil, fmt.Errorf("build the transfer signer: %w", err)
	}
	return authority, setupTrust(mgr, objects, o, authority.Trust())
}

// setupTrust adds the controller that applies the trust ConfigMap at start and whenever it changes.
func setupTrust(mgr ctrl.Manager, objects cache.Cache, o Options, trust transfer.Trust) error {
	key := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.Namespace,
		Name: transfer.TrustConfigMap}}
	publisher := &trustPublisher{client: mgr.GetClient(), namespace: o.Namespace, fieldOwner: o.FieldOwner,
		trust: trust}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("transfertrust").
		WatchesRawSource(source.Kind(objects, &corev1.ConfigMap{},
			handler.TypedEnqueueRequestsFromMapFunc(func(context.Context, *corev1.ConfigMap) []reconcile.Request {
				return []reconcile.Request{key}
			}))).
		// At start: the ConfigMap may not exist, and then no event of it comes.
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request],
		) error {
			q.Add(key)
			return nil
		})).
		Complete(publisher)
	if err != nil {
		return fmt.Errorf("build the transfer trust publisher: %w", err)
	}
	return nil
}

// ofSigner passes the requests of transfer.SignerName (the cache holds no others; a second guard),
// not their deletions, which leave nothing to do.
func ofSigner() predicate.TypedPredicate[*certv1.CertificateSigningRequest] {
	ours := func(csr *certv1.CertificateSigningRequest) bool { return csr.Spec.SignerName == transfer.SignerName }
	return predicate.TypedFuncs[*certv1.CertificateSigningRequest]{
		CreateFunc: func(e event.TypedCreateEvent[*certv1.CertificateSigningRequest]) bool { return ours(e.Object) },
		UpdateFunc: func(e event.TypedUpdateEvent[*certv1.CertificateSigningRequest]) bool {
			return ours(e.ObjectNew)
		},
		DeleteFunc:  func(event.TypedDeleteEvent[*certv1.CertificateSigningRequest]) bool { return false },
		GenericFunc: func(e event.TypedGenericEvent[*certv1.CertificateSigningRequest]) bool { return ours(e.Object) },
	}
}
