// Package v1 contains the topolvm.io/v1 API: LogicalVolume, the cluster-scoped object through which the
// CSI controller asks a node agent for one LVM logical volume and learns the result.
//
// The API is wire-compatible with TopoLVM.
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +groupName=topolvm.io
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "topolvm.io", Version: "v1"}

	// SchemeGroupVersion is GroupVersion under the name generated code expects.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder adds the types of this API to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&LogicalVolume{},
		&LogicalVolumeList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
