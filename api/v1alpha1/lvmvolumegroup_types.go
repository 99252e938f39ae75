package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LVMVolumeGroupSpec is one device class as the node agents consume it. The wipe opt-in cannot be
// set, changed or removed after creation, as on the device class it projects (a wipe cannot be
// undone).
// +kubebuilder:validation:XValidation:rule="(has(self.deviceSelector) && has(self.deviceSelector.forceWipeDevicesAndDestroyAllData)) == (has(oldSelf.deviceSelector) && has(oldSelf.deviceSelector.forceWipeDevicesAndDestroyAllData)) && (!has(self.deviceSelector) || !has(self.deviceSelector.forceWipeDevicesAndDestroyAllData) || self.deviceSelector.forceWipeDevicesAndDestroyAllData == oldSelf.deviceSelector.forceWipeDevicesAndDestroyAllData)",message="deviceSelector.forceWipeDevicesAndDestroyAllData is immutable (it cannot be set, changed or removed after the LVMVolumeGroup is created): restore its previous value",fieldPath=".deviceSelector"
// +kubebuilder:validation:XValidation:rule="!(has(self.raidConfig) && has(self.thinPoolConfig))",message="raidConfig and thinPoolConfig cannot be used together"
type LVMVolumeGroupSpec struct {
	// DeviceSelector chooses the disks of the volume group.
	// +optional
	DeviceSelector *DeviceSelector `json:"deviceSelector,omitempty"`

	// NodeSelector chooses the nodes that build the volume group.
	// +optional
	NodeSelector *corev1.NodeSelector `json:"nodeSelector,omitempty"`

	// ThinPoolConfig describes the thin pool; absent for thick device classes.
	// +optional
	ThinPoolConfig *ThinPoolConfig `json:"thinPoolConfig,omitempty"`

	// RAIDConfig describes RAID volumes of a thick device class.
	// +optional
	RAIDConfig *RAIDConfig `json:"raidConfig,omitempty"`

	// Default is true for the default device class.
	// +optional
	Default bool `json:"default,omitempty"`

	// DeviceDiscoveryPolicy says whether disks that appear later are added; unset means Static.
	// +optional
	DeviceDiscoveryPolicy DeviceDiscoveryPolicy `json:"deviceDiscoveryPolicy,omitempty"`
}

// LVMVolumeGroupStatus is the state of the volume group across the nodes it selects; the operator
// writes it from the nodes' LVMVolumeGroupNodeStatuses, which hold the detail.
type LVMVolumeGroupStatus struct {
	// Conditions of the volume group across nodes: VolumeGroupsReady is True when every selected node
	// reports it Ready, and otherwise says which nodes do not and why.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// CleanupFinalizerPrefix is the prefix of the per-node finalizer node agents put on an
// LVMVolumeGroup while they had the volume group, before VolumeGroupCleanupFinalizer; the node name
// follows it. Agents no longer add it; each removes its own where an older agent left it.
const CleanupFinalizerPrefix = "cleanup.vgmanager.node.topolvm.io/"

// VolumeGroupCleanupFinalizer is the operator's one finalizer on each LVMVolumeGroup it makes: it
// holds a deleted LVMVolumeGroup until no node's LVMVolumeGroupNodeStatus has an entry for it. A
// node agent writes its entry before it builds the volume group and drops it once the volume group
// is torn down, so the entries are the per-node claims that per-node finalizers on the shared
// object were (each of which rewrote the object and went to every agent watching it).
const VolumeGroupCleanupFinalizer = "lvm.topolvm.io/volume-group-cleanup"

// WipedAnnotationPrefix is the prefix of the annotation a node agent writes on an LVMVolumeGroup
// right after its one-time wipe (deviceSelector.forceWipeDevicesAndDestroyAllData); the node name
// follows it. While it is present, the node never wipes for that LVMVolumeGroup again.
const WipedAnnotationPrefix = "wiped.devices.lvms.openshift.io/"

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=lvmvg
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="VolumeGroupsReady")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="VolumeGroupsReady")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="VolumeGroupsReady")].message`

// LVMVolumeGroup is one device class of an LVMCluster, projected for the node agents. The operator
// owns it; each node agent builds the volume group it describes and keeps a per-node finalizer on it
// until the volume group is torn down.
type LVMVolumeGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec LVMVolumeGroupSpec `json:"spec,omitempty"`
	// +optional
	Status LVMVolumeGroupStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// LVMVolumeGroupList is a list of LVMVolumeGroups.
type LVMVolumeGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LVMVolumeGroup `json:"items"`
}
