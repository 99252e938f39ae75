// Package webhook holds the admission webhooks of `lvms operator`: the checks on LVMClusters that
// the CRD schema cannot express because they need other objects (one LVMCluster per cluster, only in
// the operator namespace, device paths no node has).
package webhook

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
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

// SetupWithManager registers the webhook.
func (v *LVMClusterValidator) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &lvmv1alpha1.LVMCluster{}).WithValidator(v).Complete()
}

// ValidateCreate allows one LVMCluster per cluster, in the operator namespace.
func (v *LVMClusterValidator) ValidateCreate(ctx context.Context, c *lvmv1alpha1.LVMCluster) (admission.Warnings, error) {
	if c.Namespace != v.namespace {
		return nil, fmt.Errorf("LVMCluster %s/%s: create it in the operator namespace %q", c.Namespace, c.Name, v.namespace)
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
	return v.warnings(ctx, c)
}

// ValidateUpdate only warns; the schema guards the transitions.
func (v *LVMClusterValidator) ValidateUpdate(ctx context.Context, _, c *lvmv1alpha1.LVMCluster) (admission.Warnings, error) {
	return v.warnings(ctx, c)
}

// ValidateDelete allows deletion; the controller holds it until no PVC uses the StorageClasses.
func (v *LVMClusterValidator) ValidateDelete(context.Context, *lvmv1alpha1.LVMCluster) (admission.Warnings, error) {
	return nil, nil
}

// warnings names device paths that no node has reported, once nodes have reported at all. Stable
// symlinks (/dev/disk/...) are resolved on the nodes, so only kernel names are compared.
func (v *LVMClusterValidator) warnings(ctx context.Context, c *lvmv1alpha1.LVMCluster) (admission.Warnings, error) {
	var reports lvmv1alpha1.LVMVolumeGroupNodeStatusList
	if err := v.reader.List(ctx, &reports, client.InNamespace(v.namespace)); err != nil {
		return nil, fmt.Errorf("list LVMVolumeGroupNodeStatuses: %w", err)
	}
	if len(reports.Items) == 0 {
		return nil, nil
	}
	seen := sets.New[string]()
	for _, r := range reports.Items {
		for _, vg := range r.Spec.LiveNodeStatus {
			seen.Insert(vg.Devices...)
			for _, ex := range vg.Excluded {
				seen.Insert(ex.Name)
			}
		}
	}
	var out admission.Warnings
	for _, dc := range c.Spec.Storage.DeviceClasses {
		if dc.DeviceSelector == nil {
			continue
		}
		for _, p := range append(append([]lvmv1alpha1.DevicePath{}, dc.DeviceSelector.Paths...), dc.DeviceSelector.OptionalPaths...) {
			path := string(p)
			if strings.HasPrefix(path, "/dev/disk/") || seen.Has(path) {
				continue
			}
			out = append(out, fmt.Sprintf("device class %s: %s exists on no node that has reported its disks", dc.Name, path))
		}
	}
	return out, nil
}
