package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AccessType of a LogicalVolume created from a source.
// +kubebuilder:validation:Enum=ro;rw
type AccessType string

// Access types.
const (
	// AccessTypeReadOnly is a read-only thin snapshot (a VolumeSnapshot).
	AccessTypeReadOnly AccessType = "ro"
	// AccessTypeReadWrite is a writable thin snapshot (a clone or a restore).
	AccessTypeReadWrite AccessType = "rw"
)

// LogicalVolumeFinalizer keeps a LogicalVolume until its node has removed the LV (TopoLVM's name).
const LogicalVolumeFinalizer = "topolvm.io/logicalvolume"

// LogicalVolumeSpec is the logical volume the CSI controller asks a node for.
//
// +kubebuilder:validation:XValidation:rule="self.name == oldSelf.name",message="spec.name is immutable"
// +kubebuilder:validation:XValidation:rule="self.nodeName == oldSelf.nodeName",message="spec.nodeName is immutable: a logical volume cannot move to another node"
// +kubebuilder:validation:XValidation:rule="has(self.deviceClass) == has(oldSelf.deviceClass) && (!has(self.deviceClass) || self.deviceClass == oldSelf.deviceClass)",message="spec.deviceClass is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.source) == has(oldSelf.source) && (!has(self.source) || self.source == oldSelf.source)",message="spec.source is immutable"
// +kubebuilder:validation:XValidation:rule="!has(self.accessType) || has(self.source)",message="spec.accessType is only meaningful with spec.source"
type LogicalVolumeSpec struct {
	// Name is the CSI volume name the LV was requested under.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// NodeName is the node that holds the LV.
	// +required
	// +kubebuilder:validation:MinLength=1
	NodeName string `json:"nodeName"`

	// Size is the requested size. It may grow (volume expansion), never shrink.
	// +required
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0",message="spec.size can only grow"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	Size resource.Quantity `json:"size"`

	// DeviceClass is the device class (volume group) of the LV; empty means the node's default.
	// +optional
	DeviceClass string `json:"deviceClass,omitempty"`

	// LvcreateOptionClass names a set of extra lvcreate options configured on the node.
	// +optional
	LvcreateOptionClass string `json:"lvcreateOptionClass,omitempty"`

	// Source is the volume ID of the LV this one is a snapshot or clone of.
	// +optional
	Source string `json:"source,omitempty"`

	// AccessType of a snapshot or clone: ro (snapshot) or rw (clone/restore).
	// +optional
	AccessType AccessType `json:"accessType,omitempty"`
}

// Condition types of a LogicalVolume.
const (
	// ConditionCreated is true once the LV exists on the node.
	ConditionCreated = "Created"
	// ConditionResized is false while the LV is smaller than spec.size.
	ConditionResized = "Resized"
)

// LogicalVolumeStatus is what the node reports about the LV.
type LogicalVolumeStatus struct {
	// VolumeID is the LV's identifier on the node; set once the LV exists.
	// +optional
	VolumeID string `json:"volumeID,omitempty"`

	// Code is a gRPC status code of the last failure (0 = OK). Kept for TopoLVM compatibility;
	// conditions carry the same information.
	// +optional
	Code uint32 `json:"code,omitempty"`

	// Message describes the last failure.
	// +optional
	Message string `json:"message,omitempty"`

	// CurrentSize is the real size of the LV (lvm2 rounds up to whole extents).
	// +optional
	CurrentSize *resource.Quantity `json:"currentSize,omitempty"`

	// Conditions: Created and Resized.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="DeviceClass",type=string,JSONPath=`.spec.deviceClass`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="VolumeID",type=string,JSONPath=`.status.volumeID`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:selectablefield:JSONPath=`.spec.nodeName`
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.volumeID) || oldSelf.status.volumeID == '' || (has(self.status) && has(self.status.volumeID) && self.status.volumeID == oldSelf.status.volumeID)",message="status.volumeID is set once, by the node that created the LV, and never changes: the node removes that LV when the LogicalVolume is deleted"

// LogicalVolume is one LVM logical volume on one node, requested by the CSI controller and created by
// that node's agent.
type LogicalVolume struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec LogicalVolumeSpec `json:"spec"`
	// +optional
	Status LogicalVolumeStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// LogicalVolumeList is a list of LogicalVolumes.
type LogicalVolumeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LogicalVolume `json:"items"`
}
