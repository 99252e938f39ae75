// Package v1alpha1 contains the lvm.topolvm.io/v1alpha1 API: LVMCluster, the object a cluster admin
// creates, and LVMVolumeGroup and LVMVolumeGroupNodeStatus, which the operator and the node agents use
// to hand the desired volume groups to each node and to report what each node built.
//
// The API is wire-compatible with OpenShift LVM Storage (LVMS).
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +groupName=lvm.topolvm.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "lvm.topolvm.io", Version: "v1alpha1"}

	// SchemeGroupVersion is GroupVersion under the name generated code expects.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder adds the types of this API to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&LVMCluster{},
		&LVMClusterList{},
		&LVMVolumeGroup{},
		&LVMVolumeGroupList{},
		&LVMVolumeGroupNodeStatus{},
		&LVMVolumeGroupNodeStatusList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
