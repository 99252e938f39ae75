package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
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

// Reasons of a VGStatus that tools such as kubectl lvms read.
const (
	// DryRunReasonPrefix starts the reason of a volume group that a node would change in dry-run
	// (DryRunAnnotation); the steps follow, in order, separated by "; ".
	DryRunReasonPrefix = "dry-run (" + DryRunAnnotation + "): nothing was changed on disk; would "
	// ReasonWaitingForNodeAgent is the reason the LVMCluster status gives a selected node's volume
	// group that the node agent has not reported yet.
	ReasonWaitingForNodeAgent = "waiting for the node agent to report this volume group"
	// ExcludedWillBeWiped is the reason an excluded disk carries when the node is to wipe it (the
	// triple opt-in) and then build the volume group on it.
	ExcludedWillBeWiped = "will be wiped (deviceSelector.forceWipeDevicesAndDestroyAllData)"
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

	// Capacity is the volume group's size and use when the node agent last looked (at most a minute
	// ago). An lvms addition; upstream LVMS does not report it.
	// +optional
	Capacity *VGCapacity `json:"capacity,omitempty"`

	// DeviceDiscoveryPolicy is the volume group's effective device discovery: Preconfigured when its
	// device selector lists disks (the policy does not apply), otherwise RuntimeDynamic (Dynamic: disks
	// that appear later are added) or RuntimeStatic (Static: they are not).
	// +kubebuilder:default=RuntimeStatic
	// +required
	DeviceDiscoveryPolicy VGDeviceDiscoveryPolicy `json:"deviceDiscoveryPolicy,omitempty"`

	// RAIDStatus is the RAID health of the volume group; set only for a device class with raidConfig.
	// +optional
	RAIDStatus *RAIDStatus `json:"raidStatus,omitempty"`
}

// VGDeviceDiscoveryPolicy is the effective device discovery of a volume group on a node.
// +kubebuilder:validation:Enum=Preconfigured;RuntimeDynamic;RuntimeStatic
type VGDeviceDiscoveryPolicy string

// Effective device discovery policies.
const (
	// VGDeviceDiscoveryPreconfigured: the device selector lists the disks.
	VGDeviceDiscoveryPreconfigured VGDeviceDiscoveryPolicy = "Preconfigured"
	// VGDeviceDiscoveryRuntimeDynamic: disks are discovered, also after the volume group was made.
	VGDeviceDiscoveryRuntimeDynamic VGDeviceDiscoveryPolicy = "RuntimeDynamic"
	// VGDeviceDiscoveryRuntimeStatic: disks were discovered when the volume group was made only.
	VGDeviceDiscoveryRuntimeStatic VGDeviceDiscoveryPolicy = "RuntimeStatic"
)

// RAIDHealth is the overall RAID health of a volume group.
// +kubebuilder:validation:Enum=Healthy;Degraded;Failed
type RAIDHealth string

// RAID health states.
const (
	// RAIDHealthy: every physical volume is present and no RAID LV reports a problem.
	RAIDHealthy RAIDHealth = "Healthy"
	// RAIDDegraded: a physical volume is missing or a RAID LV is partial, needs a refresh, has
	// mismatches or is resynchronizing; the data is still readable.
	RAIDDegraded RAIDHealth = "Degraded"
	// RAIDFailed: more physical volumes are missing than the RAID level tolerates, or an LV failed.
	RAIDFailed RAIDHealth = "Failed"
)

// RAIDStatus is the RAID health of a volume group on a node.
type RAIDStatus struct {
	// Status is the overall RAID health.
	// +required
	Status RAIDHealth `json:"status"`

	// MemberCount is the number of physical volumes of the volume group.
	// +optional
	MemberCount int `json:"memberCount,omitempty"`

	// DegradedMemberCount is the number of its physical volumes that are missing.
	// +optional
	DegradedMemberCount int `json:"degradedMemberCount,omitempty"`

	// MinSyncPercent is the lowest resynchronization progress of its RAID LVs (0-100); unset when it
	// has none.
	// +optional
	MinSyncPercent *int `json:"minSyncPercent,omitempty"`

	// LVHealth is the health of each RAID logical volume.
	// +optional
	LVHealth []RAIDLVHealth `json:"lvHealth,omitempty"`
}

// RAIDLVHealth is the health of one RAID logical volume.
type RAIDLVHealth struct {
	// Name is the logical volume's name.
	// +required
	Name string `json:"name"`

	// RAIDType is its RAID level.
	// +kubebuilder:validation:Enum=raid1;raid4;raid5;raid6;raid10
	// +required
	RAIDType string `json:"raidType"`

	// SyncPercent is its resynchronization progress (0-100).
	// +required
	SyncPercent int `json:"syncPercent"`

	// HealthStatus is lvm2's health of the LV, empty when healthy ("partial", "refresh needed",
	// "mismatches exist").
	// +optional
	HealthStatus string `json:"healthStatus,omitempty"`
}

// VGCapacity is the size and use of a volume group and its thin pool.
type VGCapacity struct {
	// Size of the volume group.
	Size resource.Quantity `json:"size"`

	// Free is the volume group's space that no logical volume (thin pool included) uses.
	Free resource.Quantity `json:"free"`

	// ThinPool is the thin pool of a thin device class.
	// +optional
	ThinPool *ThinPoolCapacity `json:"thinPool,omitempty"`
}

// ThinPoolCapacity is the size and fill level of a thin pool.
type ThinPoolCapacity struct {
	// Name of the thin pool.
	Name string `json:"name"`

	// Size of the pool's data.
	Size resource.Quantity `json:"size"`

	// DataPercent is how full the pool's data is, in percent with one decimal, e.g. "42.5".
	// +kubebuilder:validation:Pattern=`^[0-9]{1,3}(\.[0-9])?$`
	DataPercent string `json:"dataPercent"`

	// MetadataPercent is how full the pool's metadata is, as DataPercent.
	// +kubebuilder:validation:Pattern=`^[0-9]{1,3}(\.[0-9])?$`
	MetadataPercent string `json:"metadataPercent"`
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

// LVMVolumeGroupNodeStatusStatus summarises the node's volume groups for `kubectl get` (printer
// columns show one value, not a list). The operator writes it from spec.nodeStatus.
type LVMVolumeGroupNodeStatusStatus struct {
	// State is the worst state of the node's volume groups: Failed, Degraded, Progressing, or Ready
	// when all are.
	// +optional
	State VGStatusType `json:"state,omitempty"`

	// Ready counts the volume groups that are Ready, as "ready/total".
	// +optional
	Ready string `json:"ready,omitempty"`

	// Message names each volume group that is not Ready, with its state and reason.
	// +optional
	Message string `json:"message,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=lvmvgns
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`

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
