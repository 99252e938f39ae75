package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
// +kubebuilder:validation:Pattern=`^/dev/[^\s]+$`
// +kubebuilder:validation:MaxLength=256
type DevicePath string

// DeviceClass is one volume group on every selected node, with the StorageClass lvms-<name> that
// provisions volumes from it.
//
// +kubebuilder:validation:XValidation:rule="!has(self.raidConfig) || !has(self.thinPoolConfig)",message="raidConfig cannot be combined with thinPoolConfig: RAID device classes are thick, remove one of the two"
// +kubebuilder:validation:XValidation:rule="!has(self.raidConfig) || (has(self.deviceSelector) && has(self.deviceSelector.paths) && size(self.deviceSelector.paths) > 0)",message="raidConfig needs explicit disks: list them in deviceSelector.paths"
// +kubebuilder:validation:XValidation:rule="!has(self.raidConfig) || !has(self.deviceSelector) || !has(self.deviceSelector.paths) || size(self.deviceSelector.paths) >= (self.raidConfig.type == 'raid1' ? (has(self.raidConfig.mirrors) ? self.raidConfig.mirrors : 1) + 1 : self.raidConfig.type == 'raid10' ? (has(self.raidConfig.stripes) ? self.raidConfig.stripes : 2) * ((has(self.raidConfig.mirrors) ? self.raidConfig.mirrors : 1) + 1) : self.raidConfig.type == 'raid6' ? (has(self.raidConfig.stripes) ? self.raidConfig.stripes : 3) + 2 : (has(self.raidConfig.stripes) ? self.raidConfig.stripes : 2) + 1)",message="raidConfig needs more disks than deviceSelector.paths lists: raid1 needs mirrors+1, raid4 and raid5 stripes+1, raid6 stripes+2, raid10 stripes*(mirrors+1)"
// +kubebuilder:validation:XValidation:rule="has(self.nodeSelector) == has(oldSelf.nodeSelector)",message="nodeSelector is immutable: create a new device class for other nodes instead of adding or removing it"
// +kubebuilder:validation:XValidation:rule="has(self.thinPoolConfig) == has(oldSelf.thinPoolConfig)",message="thinPoolConfig cannot be added or removed: a device class stays thin or thick, create a new device class instead"
// +kubebuilder:validation:XValidation:rule="has(self.raidConfig) == has(oldSelf.raidConfig)",message="raidConfig cannot be added or removed: create a new device class instead"
// +kubebuilder:validation:XValidation:rule="(has(self.deviceSelector) && has(self.deviceSelector.forceWipeDevicesAndDestroyAllData) && self.deviceSelector.forceWipeDevicesAndDestroyAllData) == (has(oldSelf.deviceSelector) && has(oldSelf.deviceSelector.forceWipeDevicesAndDestroyAllData) && oldSelf.deviceSelector.forceWipeDevicesAndDestroyAllData)",message="deviceSelector.forceWipeDevicesAndDestroyAllData is immutable: set it when the device class is created"
// +kubebuilder:validation:XValidation:rule="(has(self.storageClassOptions) && has(self.storageClassOptions.reclaimPolicy) ? self.storageClassOptions.reclaimPolicy : 'Delete') == (has(oldSelf.storageClassOptions) && has(oldSelf.storageClassOptions.reclaimPolicy) ? oldSelf.storageClassOptions.reclaimPolicy : 'Delete')",message="storageClassOptions.reclaimPolicy is immutable (StorageClasses cannot change it): create a new device class instead"
// +kubebuilder:validation:XValidation:rule="(has(self.storageClassOptions) && has(self.storageClassOptions.volumeBindingMode) ? self.storageClassOptions.volumeBindingMode : 'WaitForFirstConsumer') == (has(oldSelf.storageClassOptions) && has(oldSelf.storageClassOptions.volumeBindingMode) ? oldSelf.storageClassOptions.volumeBindingMode : 'WaitForFirstConsumer')",message="storageClassOptions.volumeBindingMode is immutable (StorageClasses cannot change it): create a new device class instead"
type DeviceClass struct {
	// Name of the device class. It becomes the name of the volume group on each node and of the
	// StorageClass lvms-<name>. A DNS label: lower-case letters, digits and '-'.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// DeviceSelector chooses the disks of the volume group. Without it, every disk of the node that
	// passes the safety filter (blank, writable, unused) is used.
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
	// deviceSelector.paths. Cannot be combined with thinPoolConfig. Immutable.
	// +optional
	RAIDConfig *RAIDConfig `json:"raidConfig,omitempty"`

	// Default marks the device class whose StorageClass becomes the cluster default (only when no other
	// default StorageClass exists). At most one device class may be default.
	// +optional
	Default bool `json:"default,omitempty"`

	// FilesystemType is the filesystem of Filesystem-mode volumes. Immutable.
	// +optional
	// +kubebuilder:default=xfs
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="fstype is immutable: create a new device class with the other filesystem"
	FilesystemType DeviceFilesystemType `json:"fstype,omitempty"`

	// DeviceDiscoveryPolicy says whether disks that appear after the volume group was created are added
	// to it (Dynamic) or not (Static).
	// +optional
	// +kubebuilder:default=Dynamic
	DeviceDiscoveryPolicy DeviceDiscoveryPolicy `json:"deviceDiscoveryPolicy,omitempty"`

	// StorageClassOptions customise the StorageClass lvms-<name>.
	// +optional
	StorageClassOptions *StorageClassOptions `json:"storageClassOptions,omitempty"`
}

// DeviceSelector lists the disks of a volume group.
//
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
	// labels) from the selected disks before use, once per node. ALL DATA ON THEM IS LOST. Only honoured
	// together with explicit paths. Immutable.
	// +optional
	ForceWipeDevicesAndDestroyAllData *bool `json:"forceWipeDevicesAndDestroyAllData,omitempty"`
}

// ChunkSizeCalculationPolicy says how the thin pool chunk size is chosen.
// +kubebuilder:validation:Enum=Static;Host
type ChunkSizeCalculationPolicy string

// Chunk size policies.
const (
	// ChunkSizeCalculationPolicyStatic uses chunkSize (128Ki when unset).
	ChunkSizeCalculationPolicyStatic ChunkSizeCalculationPolicy = "Static"
	// ChunkSizeCalculationPolicyHost lets lvm2 choose from the pool size.
	ChunkSizeCalculationPolicyHost ChunkSizeCalculationPolicy = "Host"
)

// MetadataSizeCalculationPolicy says how the thin pool metadata size is chosen.
// +kubebuilder:validation:Enum=Host;Static
type MetadataSizeCalculationPolicy string

// Metadata size policies.
const (
	// MetadataSizeCalculationPolicyHost lets lvm2 choose from the pool size and chunk size.
	MetadataSizeCalculationPolicyHost MetadataSizeCalculationPolicy = "Host"
	// MetadataSizeCalculationPolicyStatic uses metadataSize.
	MetadataSizeCalculationPolicyStatic MetadataSizeCalculationPolicy = "Static"
)

// DefaultChunkSize is the thin pool chunk size used with the Static policy when chunkSize is unset.
const DefaultChunkSize = "128Ki"

// ThinPoolConfig describes the thin pool of a thin device class. Everything but overprovisionRatio is
// immutable, and metadataSize may only grow.
//
// +kubebuilder:validation:XValidation:rule="!has(self.chunkSize) || self.chunkSizeCalculationPolicy == 'Static'",message="chunkSize is only used with chunkSizeCalculationPolicy Static: remove chunkSize or set the policy to Static"
// +kubebuilder:validation:XValidation:rule="!has(self.metadataSize) || self.metadataSizeCalculationPolicy == 'Static'",message="metadataSize is only used with metadataSizeCalculationPolicy Static: remove metadataSize or set the policy to Static"
// +kubebuilder:validation:XValidation:rule="has(self.chunkSize) == has(oldSelf.chunkSize)",message="thinPoolConfig.chunkSize is immutable: it cannot be added or removed after the pool exists"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.metadataSize) || has(self.metadataSize)",message="thinPoolConfig.metadataSize cannot be removed once set"
type ThinPoolConfig struct {
	// Name of the thin pool LV in the volume group.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="thinPoolConfig.name is immutable: create a new device class for another pool"
	Name string `json:"name"`

	// SizePercent is the share of the volume group the thin pool takes, 10 to 100. The pool grows to
	// keep this share when disks are added.
	// +optional
	// +kubebuilder:default=90
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="thinPoolConfig.sizePercent is immutable: a thin pool cannot shrink, create a new device class to change it"
	SizePercent int32 `json:"sizePercent,omitempty"`

	// OverprovisionRatio is how many times the pool size may be promised to thin volumes. At least 1.
	// +required
	// +kubebuilder:validation:Minimum=1
	OverprovisionRatio int32 `json:"overprovisionRatio"`

	// ChunkSizeCalculationPolicy is Static (use chunkSize, default 128Ki) or Host (lvm2 chooses).
	// +optional
	// +kubebuilder:default=Static
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="thinPoolConfig.chunkSizeCalculationPolicy is immutable"
	ChunkSizeCalculationPolicy ChunkSizeCalculationPolicy `json:"chunkSizeCalculationPolicy,omitempty"`

	// ChunkSize of the thin pool, 64Ki to 1Gi, a multiple of 64Ki. Only with the Static policy.
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('64Ki')) >= 0 && quantity(string(self)).compareTo(quantity('1Gi')) <= 0",message="thinPoolConfig.chunkSize must be between 64Ki and 1Gi"
	// +kubebuilder:validation:XValidation:rule="!quantity(string(self)).isInteger() || quantity(string(self)).asInteger() % 65536 == 0",message="thinPoolConfig.chunkSize must be a multiple of 64Ki"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity(string(oldSelf))) == 0",message="thinPoolConfig.chunkSize is immutable"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	ChunkSize *resource.Quantity `json:"chunkSize,omitempty"`

	// MetadataSizeCalculationPolicy is Host (lvm2 chooses) or Static (use metadataSize).
	// +optional
	// +kubebuilder:default=Host
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="thinPoolConfig.metadataSizeCalculationPolicy is immutable"
	MetadataSizeCalculationPolicy MetadataSizeCalculationPolicy `json:"metadataSizeCalculationPolicy,omitempty"`

	// MetadataSize of the thin pool, 2Mi to 16Gi. Only with the Static policy. May grow, never shrink.
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('2Mi')) >= 0 && quantity(string(self)).compareTo(quantity('16Gi')) <= 0",message="thinPoolConfig.metadataSize must be between 2Mi and 16Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0",message="thinPoolConfig.metadataSize can only grow: set it to at least its current value"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	MetadataSize *resource.Quantity `json:"metadataSize,omitempty"`
}

// RAIDType is an lvm2 RAID level.
// +kubebuilder:validation:Enum=raid1;raid4;raid5;raid6;raid10
type RAIDType string

// RAID levels.
const (
	RAIDType1  RAIDType = "raid1"
	RAIDType4  RAIDType = "raid4"
	RAIDType5  RAIDType = "raid5"
	RAIDType6  RAIDType = "raid6"
	RAIDType10 RAIDType = "raid10"
)

// RAIDConfig makes the volumes of a thick device class lvm2 RAID LVs. Immutable.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="raidConfig is immutable: create a new device class for another RAID layout"
// +kubebuilder:validation:XValidation:rule="!has(self.mirrors) || self.type in ['raid1', 'raid10']",message="raidConfig.mirrors applies only to raid1 and raid10: remove it"
// +kubebuilder:validation:XValidation:rule="!has(self.stripes) || self.type != 'raid1'",message="raidConfig.stripes does not apply to raid1: remove it or use raid10"
// +kubebuilder:validation:XValidation:rule="!has(self.stripes) || self.stripes >= (self.type == 'raid6' ? 3 : 2)",message="raidConfig.stripes is too small: raid4, raid5 and raid10 need at least 2, raid6 at least 3"
// +kubebuilder:validation:XValidation:rule="!has(self.stripeSize) || self.type != 'raid1'",message="raidConfig.stripeSize does not apply to raid1: remove it"
type RAIDConfig struct {
	// Type is the RAID level.
	// +required
	Type RAIDType `json:"type"`

	// Mirrors is the number of additional copies of the data (lvcreate --mirrors) for raid1 and raid10.
	// Default 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	Mirrors *int32 `json:"mirrors,omitempty"`

	// Stripes is the number of data stripes (lvcreate --stripes) for raid4, raid5, raid6 and raid10.
	// Default 2 (3 for raid6).
	// +optional
	// +kubebuilder:validation:Maximum=64
	Stripes *int32 `json:"stripes,omitempty"`

	// StripeSize is the stripe size (lvcreate --stripesize), a power of two from 4Ki to 4Gi.
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('4Ki')) >= 0 && quantity(string(self)).compareTo(quantity('4Gi')) <= 0",message="raidConfig.stripeSize must be between 4Ki and 4Gi"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	StripeSize *resource.Quantity `json:"stripeSize,omitempty"`
}

// StorageClassOptions customise the StorageClass of a device class. reclaimPolicy and
// volumeBindingMode are immutable.
type StorageClassOptions struct {
	// ReclaimPolicy of the StorageClass. Default Delete.
	// +optional
	// +kubebuilder:validation:Enum=Delete;Retain
	ReclaimPolicy *corev1.PersistentVolumeReclaimPolicy `json:"reclaimPolicy,omitempty"`

	// VolumeBindingMode of the StorageClass. Default WaitForFirstConsumer, which lets the scheduler
	// pick the node by free capacity.
	// +optional
	// +kubebuilder:validation:Enum=WaitForFirstConsumer;Immediate
	VolumeBindingMode *storagev1.VolumeBindingMode `json:"volumeBindingMode,omitempty"`

	// AdditionalParameters are added to the StorageClass parameters. The keys the driver sets itself
	// (topolvm.io/*, csi.storage.k8s.io/*) are reserved.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('topolvm.io/') && !k.startsWith('csi.storage.k8s.io/'))",message="storageClassOptions.additionalParameters may not set reserved keys (topolvm.io/*, csi.storage.k8s.io/*): the operator sets them from the device class"
	AdditionalParameters map[string]string `json:"additionalParameters,omitempty"`

	// AdditionalLabels are added to the StorageClass labels. Keys under lvm.topolvm.io/ and
	// app.kubernetes.io/ are reserved.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('lvm.topolvm.io/') && !k.startsWith('app.kubernetes.io/'))",message="storageClassOptions.additionalLabels may not set reserved keys (lvm.topolvm.io/*, app.kubernetes.io/*): the operator sets them"
	AdditionalLabels map[string]string `json:"additionalLabels,omitempty"`
}
