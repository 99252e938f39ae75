package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// DeviceFilesystemType is the filesystem created on volumes of a device class.
// +kubebuilder:validation:Enum=xfs;ext4
type DeviceFilesystemType string

// Filesystem types a device class can use.
const (
	FilesystemTypeXFS  DeviceFilesystemType = "xfs"
	FilesystemTypeExt4 DeviceFilesystemType = "ext4"
)

// DeviceDiscoveryPolicy says whether a node keeps adding disks to a volume group after it was created.
// +kubebuilder:validation:Enum=Static;Dynamic
type DeviceDiscoveryPolicy string

const (
	// DeviceDiscoveryPolicyStatic builds the volume group from the disks found when it is first created
	// and never adds more.
	DeviceDiscoveryPolicyStatic DeviceDiscoveryPolicy = "Static"
	// DeviceDiscoveryPolicyDynamic keeps adding matching disks that appear later.
	DeviceDiscoveryPolicyDynamic DeviceDiscoveryPolicy = "Dynamic"
)

// DevicePath is the path of a block device on a node. Symbolic links such as /dev/disk/by-id/... are
// resolved on the node.
// +kubebuilder:validation:Pattern=`^/dev/`
// +kubebuilder:validation:MaxLength=256
type DevicePath string

// DeviceClass is one volume group on every selected node, with the StorageClass lvms-<name> that
// provisions volumes from it.
//
// The rules below are checked by the API server (docs/api-compat.md lists them with upstream's). Rules
// that compare with oldSelf see the device class of the same name (deviceClasses is a map list).
//
// +kubebuilder:validation:XValidation:rule="!has(self.raidConfig) || !has(self.thinPoolConfig)",message="raidConfig cannot be combined with thinPoolConfig: RAID device classes are thick, remove one of the two",fieldPath=".raidConfig"
// +kubebuilder:validation:XValidation:rule="!has(self.raidConfig) || (has(self.deviceSelector) && has(self.deviceSelector.paths) ? size(self.deviceSelector.paths) : 0) + (has(self.deviceSelector) && has(self.deviceSelector.optionalPaths) ? size(self.deviceSelector.optionalPaths) : 0) > 0",message="raidConfig needs explicit disks: list them in deviceSelector.paths or deviceSelector.optionalPaths",fieldPath=".raidConfig"
// +kubebuilder:validation:XValidation:rule="!has(self.raidConfig) || (has(self.deviceSelector) && has(self.deviceSelector.paths) ? size(self.deviceSelector.paths) : 0) + (has(self.deviceSelector) && has(self.deviceSelector.optionalPaths) ? size(self.deviceSelector.optionalPaths) : 0) == 0 || (has(self.deviceSelector) && has(self.deviceSelector.paths) ? size(self.deviceSelector.paths) : 0) + (has(self.deviceSelector) && has(self.deviceSelector.optionalPaths) ? size(self.deviceSelector.optionalPaths) : 0) >= (self.raidConfig.type == 'raid1' ? (has(self.raidConfig.mirrors) ? self.raidConfig.mirrors : 1) + 1 : self.raidConfig.type == 'raid10' ? (has(self.raidConfig.stripes) ? self.raidConfig.stripes : 2) * ((has(self.raidConfig.mirrors) ? self.raidConfig.mirrors : 1) + 1) : self.raidConfig.type == 'raid6' ? (has(self.raidConfig.stripes) ? self.raidConfig.stripes : 3) + 2 : (has(self.raidConfig.stripes) ? self.raidConfig.stripes : 2) + 1)",message="raidConfig needs more disks than deviceSelector lists in paths and optionalPaths: raid1 needs mirrors+1, raid4 and raid5 stripes+1, raid6 stripes+2, raid10 stripes*(mirrors+1) (mirrors default 1, stripes default 2, 3 for raid6); add disks or lower mirrors or stripes",fieldPath=".raidConfig"
// +kubebuilder:validation:XValidation:rule="!has(self.raidConfig) || self.raidConfig.type != 'raid10' || (has(self.deviceSelector) && has(self.deviceSelector.optionalPaths) && size(self.deviceSelector.optionalPaths) > 0) || (has(self.deviceSelector) && has(self.deviceSelector.paths) ? size(self.deviceSelector.paths) : 0) % ((has(self.raidConfig.mirrors) ? self.raidConfig.mirrors : 1) + 1) == 0",message="raidConfig: raid10 needs a number of deviceSelector.paths that is a multiple of mirrors+1 (each stripe is mirrored): add or remove disks",fieldPath=".raidConfig"
// +kubebuilder:validation:XValidation:rule="has(self.nodeSelector) == has(oldSelf.nodeSelector)",message="nodeSelector is immutable: create a new device class for other nodes instead of adding or removing it",fieldPath=".nodeSelector"
// +kubebuilder:validation:XValidation:rule="has(self.thinPoolConfig) == has(oldSelf.thinPoolConfig)",message="thinPoolConfig cannot be added or removed: a device class stays thin or thick, create a new device class instead",fieldPath=".thinPoolConfig"
// +kubebuilder:validation:XValidation:rule="has(self.raidConfig) == has(oldSelf.raidConfig)",message="raidConfig cannot be added or removed: create a new device class instead",fieldPath=".raidConfig"
// +kubebuilder:validation:XValidation:rule="(has(self.deviceSelector) && has(self.deviceSelector.forceWipeDevicesAndDestroyAllData)) == (has(oldSelf.deviceSelector) && has(oldSelf.deviceSelector.forceWipeDevicesAndDestroyAllData)) && (!has(self.deviceSelector) || !has(self.deviceSelector.forceWipeDevicesAndDestroyAllData) || self.deviceSelector.forceWipeDevicesAndDestroyAllData == oldSelf.deviceSelector.forceWipeDevicesAndDestroyAllData)",message="deviceSelector.forceWipeDevicesAndDestroyAllData is immutable (it cannot be set, changed or removed after the device class is created): restore its previous value",fieldPath=".deviceSelector"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.deviceSelector) && has(oldSelf.deviceSelector.paths) ? size(oldSelf.deviceSelector.paths) : 0) + (has(oldSelf.deviceSelector) && has(oldSelf.deviceSelector.optionalPaths) ? size(oldSelf.deviceSelector.optionalPaths) : 0) > 0 || (has(self.deviceSelector) && has(self.deviceSelector.paths) ? size(self.deviceSelector.paths) : 0) + (has(self.deviceSelector) && has(self.deviceSelector.optionalPaths) ? size(self.deviceSelector.optionalPaths) : 0) == 0",message="deviceSelector paths cannot be added to a device class created without them (it already uses the disks it discovered): create a new device class with these paths instead",fieldPath=".deviceSelector"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.deviceSelector) && has(oldSelf.deviceSelector.paths) ? size(oldSelf.deviceSelector.paths) : 0) + (has(oldSelf.deviceSelector) && has(oldSelf.deviceSelector.optionalPaths) ? size(oldSelf.deviceSelector.optionalPaths) : 0) == 0 || (has(self.deviceSelector) && has(self.deviceSelector.paths) ? size(self.deviceSelector.paths) : 0) + (has(self.deviceSelector) && has(self.deviceSelector.optionalPaths) ? size(self.deviceSelector.optionalPaths) : 0) > 0",message="deviceSelector cannot lose all its paths: keep at least one disk in deviceSelector.paths or optionalPaths, or remove the whole device class",fieldPath=".deviceSelector"
// +kubebuilder:validation:XValidation:rule="(has(self.storageClassOptions) && has(self.storageClassOptions.reclaimPolicy) ? self.storageClassOptions.reclaimPolicy : 'Delete') == (has(oldSelf.storageClassOptions) && has(oldSelf.storageClassOptions.reclaimPolicy) ? oldSelf.storageClassOptions.reclaimPolicy : 'Delete')",message="storageClassOptions.reclaimPolicy is immutable (StorageClasses cannot change it): create a new device class instead",fieldPath=".storageClassOptions"
// +kubebuilder:validation:XValidation:rule="(has(self.storageClassOptions) && has(self.storageClassOptions.volumeBindingMode) ? self.storageClassOptions.volumeBindingMode : 'WaitForFirstConsumer') == (has(oldSelf.storageClassOptions) && has(oldSelf.storageClassOptions.volumeBindingMode) ? oldSelf.storageClassOptions.volumeBindingMode : 'WaitForFirstConsumer')",message="storageClassOptions.volumeBindingMode is immutable (StorageClasses cannot change it): create a new device class instead",fieldPath=".storageClassOptions"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.storageClassOptions) && has(oldSelf.storageClassOptions.additionalParameters)) || !has(self.storageClassOptions) || !has(self.storageClassOptions.additionalParameters) || size(self.storageClassOptions.additionalParameters) == 0",message="storageClassOptions.additionalParameters is immutable (StorageClass parameters cannot change): create a new device class instead",fieldPath=".storageClassOptions"
type DeviceClass struct {
	// Name of the device class. It becomes the name of the volume group on each node and of the
	// StorageClass lvms-<name>. A DNS label: lower-case letters, digits and '-', at most 63 characters
	// (it is also the name part of the node annotation capacity.topolvm.io/<name>).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// DeviceSelector chooses the disks of the volume group. Without it, every disk of the node that
	// passes the safety filter (blank, writable, unused) is used; that is only allowed when the cluster
	// has a single device class.
	// +optional
	DeviceSelector *DeviceSelector `json:"deviceSelector,omitempty"`

	// NodeSelector chooses the nodes that get this volume group. Without it, every node that runs the
	// node agent does. Immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="nodeSelector is immutable: create a new device class for other nodes"
	NodeSelector *corev1.NodeSelector `json:"nodeSelector,omitempty"`

	// ThinPoolConfig makes this a thin device class: volumes are thin LVs in one thin pool per node,
	// and snapshots and clones are possible. Without it, volumes are thick (linear) LVs.
	// +optional
	ThinPoolConfig *ThinPoolConfig `json:"thinPoolConfig,omitempty"`

	// RAIDConfig makes volumes of this thick device class RAID LVs spread over the disks listed in
	// deviceSelector. Cannot be combined with thinPoolConfig. Immutable.
	// +optional
	RAIDConfig *RAIDConfig `json:"raidConfig,omitempty"`

	// Default marks the device class whose StorageClass becomes the cluster default (only when no other
	// default StorageClass exists). At most one device class may be default, and the default device
	// class cannot be removed (make another one default first).
	// +optional
	Default bool `json:"default,omitempty"`

	// FilesystemType is the filesystem of Filesystem-mode volumes. Immutable.
	// +optional
	// +kubebuilder:default=xfs
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="fstype is immutable: create a new device class with the other filesystem"
	FilesystemType DeviceFilesystemType `json:"fstype,omitempty"`

	// DeviceDiscoveryPolicy says whether disks that appear after the volume group was created are added
	// to it (Dynamic) or not (Static). Unset means Dynamic, as for device classes made before the field
	// existed; the admission webhook sets Static on a new LVMCluster's device classes that list no disks
	// and leave it unset, as upstream LVMS does. With deviceSelector paths the listed disks decide and
	// the policy has no effect; RAID device classes never add disks later, but for a listed one while
	// their volume group misses a disk (the agent repairs the RAID LVs onto it).
	// +optional
	DeviceDiscoveryPolicy DeviceDiscoveryPolicy `json:"deviceDiscoveryPolicy,omitempty"`

	// StorageClassOptions customise the StorageClass lvms-<name>.
	// +optional
	// +kubebuilder:default={}
	StorageClassOptions *StorageClassOptions `json:"storageClassOptions,omitempty"`
}

// DeviceSelector lists the disks of a volume group.
//
// +kubebuilder:validation:XValidation:rule="(has(self.paths) && size(self.paths) > 0) || (has(self.optionalPaths) && size(self.optionalPaths) > 0)",message="deviceSelector needs at least one disk in paths or optionalPaths: list the disks, or (with a single device class) remove deviceSelector to use every blank disk"
// +kubebuilder:validation:XValidation:rule="!has(self.paths) || !has(self.optionalPaths) || !self.paths.exists(p, p in self.optionalPaths)",message="a disk is listed in both paths and optionalPaths: list each disk once"
type DeviceSelector struct {
	// Paths are disks that must exist on every selected node; a node lacking one reports the volume
	// group as Failed. Paths must start with /dev/.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	Paths []DevicePath `json:"paths,omitempty"`

	// OptionalPaths are disks used where they exist; at least one of them must exist on each selected
	// node. Paths must start with /dev/.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	OptionalPaths []DevicePath `json:"optionalPaths,omitempty"`

	// ForceWipeDevicesAndDestroyAllData wipes every signature (filesystems, partition tables, old LVM
	// labels) from the disks in paths before use, once per node. ALL DATA ON THEM IS LOST. optionalPaths
	// are never wiped, and neither is a disk of another lvms volume group. Immutable.
	// +optional
	ForceWipeDevicesAndDestroyAllData *bool `json:"forceWipeDevicesAndDestroyAllData,omitempty"`
}

// ListsDisks reports whether the selector names disks (paths or optionalPaths); a nil or empty
// selector means every blank disk of the node.
func (s *DeviceSelector) ListsDisks() bool {
	return s != nil && len(s.Paths)+len(s.OptionalPaths) > 0
}
