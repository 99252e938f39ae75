package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VGStatusType is the state of one volume group on one node.
// +kubebuilder:validation:Enum=Progressing;Ready;Failed;Degraded
type VGStatusType string

// Volume group states.
const (
	VGStatusProgressing VGStatusType = "Progressing"
	VGStatusReady       VGStatusType = "Ready"
	VGStatusFailed      VGStatusType = "Failed"
	VGStatusDegraded    VGStatusType = "Degraded"
)

// VGStatus is the state of one volume group on one node.
type VGStatus struct {
	// Name of the volume group (the device class).
	// +required
	Name string `json:"name"`

	// Status is Progressing, Ready, Degraded or Failed.
	// +optional
	Status VGStatusType `json:"status,omitempty"`

	// Reason explains a status other than Ready.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Devices are the disks that are physical volumes of the volume group.
	// +optional
	Devices []string `json:"devices,omitempty"`

	// Excluded are the disks of the node that were not used, each with the reasons why.
	// +optional
	Excluded []ExcludedDevice `json:"excluded,omitempty"`
}

// ExcludedDevice is a disk that the node agent did not use, and why.
type ExcludedDevice struct {
	// Name is the device path.
	Name string `json:"name"`

	// Reasons say, in words, why the disk was not used.
	Reasons []string `json:"reasons"`
}

// LVMVolumeGroupNodeStatusSpec holds what one node reports about its volume groups.
type LVMVolumeGroupNodeStatusSpec struct {
	// LiveNodeStatus is the state of every volume group on the node.
	// +optional
	// +listType=map
	// +listMapKey=name
	LiveNodeStatus []VGStatus `json:"nodeStatus,omitempty"`
}

// LVMVolumeGroupNodeStatusStatus is reserved.
type LVMVolumeGroupNodeStatusStatus struct{}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=lvmvgns

// LVMVolumeGroupNodeStatus is what the node agent of one node reports about its volume groups. Its
// name is the node's name.
type LVMVolumeGroupNodeStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec LVMVolumeGroupNodeStatusSpec `json:"spec,omitempty"`
	// +optional
	Status LVMVolumeGroupNodeStatusStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// LVMVolumeGroupNodeStatusList is a list of LVMVolumeGroupNodeStatuses.
type LVMVolumeGroupNodeStatusList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LVMVolumeGroupNodeStatus `json:"items"`
}
