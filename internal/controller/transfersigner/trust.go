package transfersigner

import (
	"context"
	"fmt"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

// trustPublisher applies the ConfigMap transfer.TrustConfigMap with the authority's trust; it is
// reconciled at start and whenever the ConfigMap changes or goes, so that an edit or a deletion is
// undone.
type trustPublisher struct {
	client     client.Client
	namespace  string
	fieldOwner string
	trust      transfer.Trust
}

// Reconcile applies the trust ConfigMap (its one request is the ConfigMap's name).
func (p *trustPublisher) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	ac := corev1ac.ConfigMap(transfer.TrustConfigMap, p.namespace).
		WithLabels(map[string]string{labelManagedBy: p.fieldOwner}).
		WithData(p.trust.ConfigMapData())
	if err := p.client.Apply(ctx, ac, client.FieldOwner(p.fieldOwner), client.ForceOwnership); err != nil {
		return ctrl.Result{}, fmt.Errorf("apply the transfer trust ConfigMap %s/%s: %w", p.namespace,
			transfer.TrustConfigMap, err)
	}
	return ctrl.Result{}, nil
}
