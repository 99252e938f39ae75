package webhook

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// Setup registers the LVMCluster webhooks of the operator in namespace: defaulting on create and
// validation on create and update.
func Setup(mgr ctrl.Manager, namespace string) error {
	return ctrl.NewWebhookManagedBy(mgr, &lvmv1alpha1.LVMCluster{}).
		WithDefaulter(LVMClusterDefaulter{}).
		WithValidator(NewLVMClusterValidator(mgr.GetAPIReader(), namespace)).
		Complete()
}

// LVMClusterDefaulter sets on a new LVMCluster what upstream LVMS's mutating webhook sets, so that
// the same manifest behaves the same here. It only runs on create: device classes stored before keep
// an unset policy, which the node agent reads as Static too (never Dynamic unless asked).
type LVMClusterDefaulter struct{}

// +kubebuilder:webhook:path=/mutate-lvm-topolvm-io-v1alpha1-lvmcluster,mutating=true,failurePolicy=fail,sideEffects=None,groups=lvm.topolvm.io,resources=lvmclusters,verbs=create,versions=v1alpha1,name=mlvmcluster.lvm.topolvm.io,admissionReviewVersions=v1

// Default sets deviceDiscoveryPolicy Static on every device class that lists no disks and leaves
// the policy unset: such a class takes the disks found when its volume group is created and no disk
// that appears later. With listed disks the list decides and the policy stays unset.
func (LVMClusterDefaulter) Default(_ context.Context, c *lvmv1alpha1.LVMCluster) error {
	for i := range c.Spec.Storage.DeviceClasses {
		dc := &c.Spec.Storage.DeviceClasses[i]
		if dc.DeviceDiscoveryPolicy == "" && !dc.DeviceSelector.ListsDisks() {
			dc.DeviceDiscoveryPolicy = lvmv1alpha1.DeviceDiscoveryPolicyStatic
		}
	}
	return nil
}
