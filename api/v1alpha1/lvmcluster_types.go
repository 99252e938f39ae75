package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LVMClusterSpec is the desired LVM storage of the cluster.
type LVMClusterSpec struct {
	// Tolerations are added to the node agent pods so they run on tainted nodes.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Storage lists the device classes.
	// +optional
	Storage Storage `json:"storage,omitempty"`

	// Transfer configures the copies of volume data between nodes: restores and clones placed on
	// another node than their source's (docs/mobility.md). An lvms extension: LVMS has no such field.
	// +optional
	Transfer *TransferSpec `json:"transfer,omitempty"`
}

// CrossNodePolicy says whether restores and clones may be placed on another node than their source's.
// +kubebuilder:validation:Enum=Enabled;Disabled
type CrossNodePolicy string

const (
	// CrossNodeEnabled places a restore or a clone on the node the scheduler selected for its pod, and
	// the node agents copy the source's data there when that is another node.
	CrossNodeEnabled CrossNodePolicy = "Enabled"
	// CrossNodeDisabled keeps every restore and clone on its source's node, as LVMS and TopoLVM do.
	CrossNodeDisabled CrossNodePolicy = "Disabled"
)

// TransferSpec configures the copies of volume data between nodes.
type TransferSpec struct {
	// CrossNode: Enabled lets restores and clones go to the node the scheduler selected for their pod,
	// their data copied there; Disabled (the default) keeps them on their source's node. The operator's
	// --cross-node-restore flag enables it for every LVMCluster.
	// +optional
	CrossNode CrossNodePolicy `json:"crossNode,omitempty"`

	// Bandwidth caps the bytes per second one node writes for all its copies together, so that a copy
	// does not starve the node's workloads (for example 100Mi); unset or 0: no limit.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!string(self).startsWith('-')",message="bandwidth is a non-negative quantity of bytes per second (for example 100Mi), or 0 for no limit"
	Bandwidth *resource.Quantity `json:"bandwidth,omitempty"`
}

// CrossNode reports whether the cluster's restores and clones may be placed on another node than
// their source's.
func (c *LVMCluster) CrossNode() bool {
	return c.Spec.Transfer != nil && c.Spec.Transfer.CrossNode == CrossNodeEnabled
}

// Storage is the storage layout of the cluster.
type Storage struct {
	// DeviceClasses are the volume groups built on the nodes, one StorageClass each. Names are unique;
	// at most one is the default and it cannot be removed; with several device classes each lists its
	// disks; a disk may be listed by one device class per nodeSelector only.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.filter(c, has(c.default) && c.default).size() <= 1",message="at most one device class can be default: set default to false on all but one"
	// +kubebuilder:validation:XValidation:rule="size(self) < 2 || self.all(c, has(c.deviceSelector))",message="with several device classes each one needs a deviceSelector with paths or optionalPaths (only a single device class may use every blank disk): add a deviceSelector to each device class"
	// +kubebuilder:validation:XValidation:rule="self.all(a, !has(a.deviceSelector) || self.all(b, a.name == b.name || !has(b.deviceSelector) || has(a.nodeSelector) != has(b.nodeSelector) || (has(a.nodeSelector) && a.nodeSelector != b.nodeSelector) || !((has(a.deviceSelector.paths) ? a.deviceSelector.paths : []) + (has(a.deviceSelector.optionalPaths) ? a.deviceSelector.optionalPaths : [])).exists(p, p in (has(b.deviceSelector.paths) ? b.deviceSelector.paths : []) + (has(b.deviceSelector.optionalPaths) ? b.deviceSelector.optionalPaths : []))))",message="a disk is listed by two device classes with the same nodeSelector: a disk can belong to one volume group per node, list it in one device class only"
	// +kubebuilder:validation:XValidation:rule="oldSelf.all(o, !(has(o.default) && o.default) || self.exists(n, n.name == o.name))",message="the default device class cannot be removed: set default on another device class (or on none) first, then remove it"
	DeviceClasses []DeviceClass `json:"deviceClasses,omitempty"`
}

// DryRunAnnotation set to "true" on an LVMCluster (or on one of its LVMVolumeGroups) makes every node
// agent only plan: nothing is changed on disk, and each node's status says what it would do
// (DryRunReasonPrefix). Removing it applies that plan.
const DryRunAnnotation = "lvm.topolvm.io/dry-run"

// LVMStateType is the overall state of an LVMCluster.
type LVMStateType string

// LVMCluster states.
const (
	LVMStatusProgressing LVMStateType = "Progressing"
	LVMStatusReady       LVMStateType = "Ready"
	LVMStatusFailed      LVMStateType = "Failed"
	LVMStatusDegraded    LVMStateType = "Degraded"
	LVMStatusUnknown     LVMStateType = "Unknown"
)

// Condition types of an LVMCluster.
const (
	// ConditionResourcesAvailable is true when every operand (CSIDriver, node DaemonSet,
	// StorageClasses, ...) was written successfully.
	ConditionResourcesAvailable = "ResourcesAvailable"
	// ConditionVolumeGroupsReady is true when every selected node reports every volume group Ready.
	ConditionVolumeGroupsReady = "VolumeGroupsReady"
	// ConditionDeletionBlocked is true while a deleted LVMCluster waits for PVCs that still use its
	// StorageClasses, or for nodes to tear down their volume groups.
	ConditionDeletionBlocked = "DeletionBlocked"
)

// LVMClusterStatus is the observed state of an LVMCluster.
type LVMClusterStatus struct {
	// Ready is true when State is Ready. Kept for compatibility; prefer conditions.
	// +optional
	Ready bool `json:"ready,omitempty"`

	// State summarises the cluster: Progressing, Ready, Degraded, Failed or Unknown.
	// +optional
	State LVMStateType `json:"state,omitempty"`

	// DeviceClassStatuses report every device class on every node.
	// +optional
	// +listType=map
	// +listMapKey=name
	DeviceClassStatuses []DeviceClassStatus `json:"deviceClassStatuses,omitempty"`

	// Conditions: ResourcesAvailable and VolumeGroupsReady.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// DeviceClassStatus is the state of one device class on every node.
type DeviceClassStatus struct {
	// Name of the device class.
	Name string `json:"name"`

	// NodeStatus is the volume group of this device class on each node.
	// +optional
	// +listType=map
	// +listMapKey=node
	NodeStatus []NodeStatus `json:"nodeStatus,omitempty"`
}

// NodeStatus is a volume group on one node.
type NodeStatus struct {
	VGStatus `json:",inline"`

	// Node is the name of the node.
	Node string `json:"node"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=lvmc
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Volume Groups",type=string,JSONPath=`.status.conditions[?(@.type=="VolumeGroupsReady")].message`
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spec) || !has(oldSelf.spec.storage) || !has(oldSelf.spec.storage.deviceClasses) || size(oldSelf.spec.storage.deviceClasses) == 0 || (has(self.spec) && has(self.spec.storage) && has(self.spec.storage.deviceClasses) && size(self.spec.storage.deviceClasses) > 0)",message="spec.storage.deviceClasses cannot become empty: keep at least one device class, or delete the LVMCluster to remove all storage",fieldPath=".spec.storage"

// LVMCluster is the LVM storage of the cluster: the device classes (volume groups and thin pools) to
// build on the nodes and the StorageClasses to publish. Create one, in the operator's namespace.
type LVMCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec LVMClusterSpec `json:"spec,omitempty"`
	// +optional
	Status LVMClusterStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// LVMClusterList is a list of LVMClusters.
type LVMClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LVMCluster `json:"items"`
}
