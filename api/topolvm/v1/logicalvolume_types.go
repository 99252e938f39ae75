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
// +kubebuilder:validation:XValidation:rule="has(self.sourceNode) == has(oldSelf.sourceNode) && (!has(self.sourceNode) || self.sourceNode == oldSelf.sourceNode)",message="spec.sourceNode is immutable"
// +kubebuilder:validation:XValidation:rule="!has(self.sourceNode) || (has(self.source) && self.sourceNode != self.nodeName)",message="spec.sourceNode names the node of spec.source when it is not spec.nodeName"
type LogicalVolumeSpec struct {
	// Name is the CSI volume name the LV was requested under. As TopoLVM's, the schema accepts an empty
	// name (TopoLVM's own tests create such objects); the node agent never makes an LV for one.
	// +required
	Name string `json:"name"`

	// NodeName is the node that holds the LV (empty: none; no node agent acts on it).
	// +required
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

	// SourceNode is the node of spec.source when it is another node than spec.nodeName (an lvms
	// extension; TopoLVM has none): the LV is made on spec.nodeName and filled with a copy of the
	// source's data, which node spec.nodeName's agent fetches from sourceNode's over the transfer
	// channel (docs/mobility.md). The volume ID is set once the copy is complete and verified.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SourceNode string `json:"sourceNode,omitempty"`

	// IOLimits caps the throughput of the volume in every pod that uses it (cgroup v2 io.max on the
	// pod's cgroup for the volume's device), set from the mutable parameters of a
	// VolumeAttributesClass (an lvms extension; docs/csi.md#volumeattributesclass). Absent: no cap.
	// +optional
	IOLimits *IOLimits `json:"ioLimits,omitempty"`

	// ReadAhead is the LV's read-ahead, set by lvm2 on the volume's device while it is in use:
	// "auto" (lvm2's default: the kernel chooses), "none", or a number of 512-byte sectors (lvm2
	// rounds it to the node's page size). Set from the mutable parameters of a
	// VolumeAttributesClass (an lvms extension; docs/csi.md#volumeattributesclass). Absent: the
	// LV keeps the read-ahead it has.
	// +optional
	// +kubebuilder:validation:MaxLength=10
	// +kubebuilder:validation:Pattern=`^(auto|none|[1-9][0-9]*)$`
	ReadAhead string `json:"readAhead,omitempty"`
}

// IOLimits are the caps of io.max; an unset (zero) field is no cap.
type IOLimits struct {
	// ReadBytesPerSecond caps reads (io.max rbps).
	// +optional
	// +kubebuilder:validation:Minimum=1
	ReadBytesPerSecond int64 `json:"readBytesPerSecond,omitempty"`
	// WriteBytesPerSecond caps writes (io.max wbps).
	// +optional
	// +kubebuilder:validation:Minimum=1
	WriteBytesPerSecond int64 `json:"writeBytesPerSecond,omitempty"`
	// ReadIOPS caps read operations per second (io.max riops).
	// +optional
	// +kubebuilder:validation:Minimum=1
	ReadIOPS int64 `json:"readIOPS,omitempty"`
	// WriteIOPS caps write operations per second (io.max wiops).
	// +optional
	// +kubebuilder:validation:Minimum=1
	WriteIOPS int64 `json:"writeIOPS,omitempty"`
}

// Condition types of a LogicalVolume.
const (
	// ConditionCreated is true once the LV exists on the node.
	ConditionCreated = "Created"
	// ConditionResized is false while the LV is smaller than spec.size.
	ConditionResized = "Resized"
	// ConditionCopied is true once the data of a source on another node (spec.sourceNode) is
	// copied and verified.
	ConditionCopied = "Copied"
	// ConditionIOLimited is true once spec.ioLimits of the condition's generation is in force in
	// every pod that uses the volume (set only on a volume that has or had spec.ioLimits).
	ConditionIOLimited = "IOLimited"
	// ConditionReadAheadSet is true once the LV has spec.readAhead of the condition's generation
	// (set only on a volume that has spec.readAhead).
	ConditionReadAheadSet = "ReadAheadSet"
)

// TransferPhase is where a copy from another node stands.
// +kubebuilder:validation:Enum=Waiting;Copying;Complete
type TransferPhase string

// Transfer phases.
const (
	// TransferWaiting: the LV exists; the node waits for the operator's token of the next attempt.
	TransferWaiting TransferPhase = "Waiting"
	// TransferCopying: an attempt is fetching the data.
	TransferCopying TransferPhase = "Copying"
	// TransferComplete: every byte is copied and verified.
	TransferComplete TransferPhase = "Complete"
)

// TransferStatus is the progress of the copy of a source on another node (spec.sourceNode). The node
// agent writes the phase, attempts and progress; the operator the token and the source's address.
type TransferStatus struct {
	// Phase of the copy.
	// +optional
	Phase TransferPhase `json:"phase,omitempty"`
	// Attempt numbers the node's fetches (from 1); each needs a token of its own.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`
	// VerifiedBytes is the offset below which every byte of the copy is written, synced and read
	// back verified: where the next attempt resumes (of the LV's size, spec.size).
	// +optional
	VerifiedBytes int64 `json:"verifiedBytes,omitempty"`
	// CopiedBytes counts the bytes moved over all attempts (a thin source's allocated bytes only).
	// +optional
	CopiedBytes int64 `json:"copiedBytes,omitempty"`
	// StartTime is when the first attempt began; CompletionTime when the copy was verified.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Message says why the last attempt failed (it is retried).
	// +optional
	Message string `json:"message,omitempty"`
	// Token authorises attempt TokenAttempt: single-use, short-lived, and good only for this node's
	// agent presenting its own certificate, so reading it grants nothing.
	// +optional
	Token string `json:"token,omitempty"`
	// +optional
	TokenAttempt int32 `json:"tokenAttempt,omitempty"`
	// SourceAddress is where the source node's agent serves transfers (host:port).
	// +optional
	SourceAddress string `json:"sourceAddress,omitempty"`
}

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

	// Transfer is the progress of a copy from spec.sourceNode (an lvms extension).
	// +optional
	Transfer *TransferStatus `json:"transfer,omitempty"`
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
