// Package webhook holds the admission webhooks of `lvms operator` for LVMClusters. The CRD schema and
// its CEL rules decide everything the object alone (or with its previous version) can decide, so they
// hold while the webhooks are down; the validating webhook adds what needs other objects (one
// LVMCluster per cluster, only in the operator namespace, a disk shared by device classes that select
// the same existing node), the StorageClass label values CEL cannot afford to check, and upstream
// LVMS's admission warnings; the defaulting webhook sets the one default upstream sets by webhook
// (deviceDiscoveryPolicy Static for a new class without listed disks). docs/api-compat.md lists every
// rule.
//
// It also holds TopoLVM's pod webhook (PodCapacityMutator, off unless `lvms operator
// --pod-mutating-webhook`), which marks pods with unbound topolvm.io claims for the scheduler
// extender, with the nodes of the snapshots and claims those restore or clone;
// docs/scheduler-extender.md describes it.
package webhook

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// LVMClusterValidator validates LVMClusters.
type LVMClusterValidator struct {
	// reader should read through to the API server (not a cache) so that two LVMClusters created in
	// quick succession are both seen.
	reader    client.Reader
	namespace string
}

// NewLVMClusterValidator returns the validator for LVMClusters of the operator in namespace.
func NewLVMClusterValidator(reader client.Reader, namespace string) *LVMClusterValidator {
	return &LVMClusterValidator{reader: reader, namespace: namespace}
}

// +kubebuilder:webhook:path=/validate-lvm-topolvm-io-v1alpha1-lvmcluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=lvm.topolvm.io,resources=lvmclusters,verbs=create;update,versions=v1alpha1,name=vlvmcluster.lvm.topolvm.io,admissionReviewVersions=v1

// ValidateCreate allows one LVMCluster per cluster, in the operator namespace, and no disk shared by
// two device classes on a node that both select.
func (v *LVMClusterValidator) ValidateCreate(
	ctx context.Context,
	c *lvmv1alpha1.LVMCluster,
) (admission.Warnings, error) {
	if c.Namespace != v.namespace {
		return nil, fmt.Errorf("metadata.namespace: LVMCluster %s/%s is outside the operator namespace: "+
			"create it in the operator namespace %q", c.Namespace, c.Name, v.namespace)
	}
	var list lvmv1alpha1.LVMClusterList
	if err := v.reader.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list existing LVMClusters: %w", err)
	}
	for _, other := range list.Items {
		if other.Namespace != c.Namespace || other.Name != c.Name {
			return nil, fmt.Errorf("only one LVMCluster is supported per cluster and %s/%s already exists: "+
				"add device classes to it instead", other.Namespace, other.Name)
		}
	}
	if err := checkLabelValues(c); err != nil {
		return nil, err
	}
	if err := v.checkSharedDisks(ctx, nil, c); err != nil {
		return nil, err
	}
	return v.warnings(ctx, c, true)
}

// ValidateUpdate refuses a disk newly shared by two device classes on a node that both select, and
// warns as on create; the schema guards the transitions.
func (v *LVMClusterValidator) ValidateUpdate(
	ctx context.Context,
	old, c *lvmv1alpha1.LVMCluster,
) (admission.Warnings, error) {
	if err := checkLabelValues(c); err != nil {
		return nil, err
	}
	if err := v.checkSharedDisks(ctx, old, c); err != nil {
		return nil, err
	}
	return v.warnings(ctx, c, false)
}

// ValidateDelete allows deletion; the controller holds it until no PVC uses the StorageClasses.
func (v *LVMClusterValidator) ValidateDelete(context.Context, *lvmv1alpha1.LVMCluster) (admission.Warnings, error) {
	return nil, nil
}
