package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

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

// DefaultMetadataSize is the metadata size that the Static policy stands for when metadataSize is
// unset; the rule that metadataSize only grows compares against it.
const DefaultMetadataSize = "1Gi"

// ThinPoolConfig describes the thin pool of a thin device class. name, sizePercent and the chunk size
// are immutable; metadataSize may only grow while the policy stays Static.
//
// +kubebuilder:validation:XValidation:rule="!has(self.chunkSize) || self.chunkSizeCalculationPolicy == 'Static'",message="chunkSize is only used with chunkSizeCalculationPolicy Static: remove chunkSize or set the policy to Static",fieldPath=".chunkSize"
// +kubebuilder:validation:XValidation:rule="!has(self.metadataSize) || self.metadataSizeCalculationPolicy == 'Static'",message="metadataSize is only used with metadataSizeCalculationPolicy Static: remove metadataSize or set the policy to Static",fieldPath=".metadataSize"
// +kubebuilder:validation:XValidation:rule="has(self.chunkSize) == has(oldSelf.chunkSize)",message="thinPoolConfig.chunkSize is immutable: it cannot be added or removed after the pool exists",fieldPath=".chunkSize"
// +kubebuilder:validation:XValidation:rule="self.metadataSizeCalculationPolicy != 'Static' || oldSelf.metadataSizeCalculationPolicy != 'Static' || quantity(has(self.metadataSize) ? string(self.metadataSize) : '1Gi').compareTo(quantity(has(oldSelf.metadataSize) ? string(oldSelf.metadataSize) : '1Gi')) >= 0",message="thinPoolConfig.metadataSize can only grow (unset means 1Gi): set it to at least its current value",fieldPath=".metadataSize"
// +kubebuilder:validation:XValidation:rule="!has(self.autoExtend) || !has(self.autoExtend.maxSizePercent) || !has(self.sizePercent) || self.autoExtend.maxSizePercent >= self.sizePercent",message="thinPoolConfig.autoExtend.maxSizePercent is below sizePercent, which the pool already takes: set it to sizePercent or more",fieldPath=".autoExtend.maxSizePercent"
type ThinPoolConfig struct {
	// Name of the thin pool LV in the volume group: letters, digits and + _ . - as lvm2 allows, not
	// starting with '-', and none of lvm2's reserved names. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=127
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9+_.][A-Za-z0-9+_.-]*$`
	// +kubebuilder:validation:XValidation:rule="self != '.' && self != '..' && !self.startsWith('snapshot') && !self.startsWith('pvmove') && !['_cdata', '_cmeta', '_corig', '_mimage', '_mlog', '_pmspare', '_rimage', '_rmeta', '_tdata', '_tmeta', '_vdata', '_vorigin'].exists(r, self.contains(r))",message="thinPoolConfig.name is reserved by lvm2 ('.', '..', names starting with snapshot or pvmove, or containing _tdata, _tmeta, _rimage and the like): choose another name"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="thinPoolConfig.name is immutable: create a new device class for another pool"
	Name string `json:"name"`

	// SizePercent is the share of the volume group the thin pool takes, 10 to 100. The pool grows to
	// keep this share when disks are added. Above 90 leaves no room to grow the metadata.
	// +optional
	// +kubebuilder:default=90
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="thinPoolConfig.sizePercent is immutable: a thin pool cannot shrink, create a new device class to change it"
	SizePercent int32 `json:"sizePercent,omitempty"`

	// OverprovisionRatio is how many times the pool size may be promised to thin volumes, 1 to 100.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	OverprovisionRatio int32 `json:"overprovisionRatio"`

	// ChunkSizeCalculationPolicy is Static (use chunkSize; unset: 128Ki, doubled as often as a new
	// pool above 31.75 TiB needs) or Host (lvm2 chooses).
	// +optional
	// +kubebuilder:default=Static
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="thinPoolConfig.chunkSizeCalculationPolicy is immutable"
	ChunkSizeCalculationPolicy ChunkSizeCalculationPolicy `json:"chunkSizeCalculationPolicy,omitempty"`

	// ChunkSize of the thin pool, 64Ki to 1Gi, a multiple of 64Ki. Only with the Static policy. A
	// pool addresses at most 266,342,400 chunks (128Ki: 31.75 TiB); a chunkSize too small for the
	// new pool is refused by the node agent with the size that would do.
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('64Ki')) >= 0 && quantity(string(self)).compareTo(quantity('1Gi')) <= 0",message="thinPoolConfig.chunkSize must be between 64Ki and 1Gi"
	// +kubebuilder:validation:XValidation:rule="!quantity(string(self)).isInteger() || quantity(string(self)).asInteger() % 65536 == 0",message="thinPoolConfig.chunkSize must be a multiple of 64Ki (lvm2 refuses other thin pool chunk sizes)"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity(string(oldSelf))) == 0",message="thinPoolConfig.chunkSize is immutable"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	ChunkSize *resource.Quantity `json:"chunkSize,omitempty"`

	// MetadataSizeCalculationPolicy is Host (lvm2 chooses) or Static (use metadataSize, 1Gi when unset).
	// +optional
	// +kubebuilder:default=Host
	MetadataSizeCalculationPolicy MetadataSizeCalculationPolicy `json:"metadataSizeCalculationPolicy,omitempty"`

	// MetadataSize of the thin pool, 2Mi to 16Gi. Only with the Static policy. May grow, never shrink.
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('2Mi')) >= 0 && quantity(string(self)).compareTo(quantity('16Gi')) <= 0",message="thinPoolConfig.metadataSize must be between 2Mi and 16Gi"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	MetadataSize *resource.Quantity `json:"metadataSize,omitempty"`

	// AutoExtend grows the pool into the volume group's free space when its data or its metadata
	// fills up, as lvm2's thin_pool_autoextend settings would with dmeventd (which nodes do not
	// run). An lvms extension: upstream has no such field. Unset: the pool keeps sizePercent.
	// +optional
	AutoExtend *ThinPoolAutoExtend `json:"autoExtend,omitempty"`
}

// ThinPoolAutoExtend says when and how far the node agent extends a thin pool into the free space
// of its volume group. The agent looks at the pool on every pass (at least once a minute).
type ThinPoolAutoExtend struct {
	// ThresholdPercent is the fill level of the pool's data or metadata, 50 to 95, at or above which
	// the pool is extended (data and metadata each by their own level).
	// +optional
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=50
	// +kubebuilder:validation:Maximum=95
	ThresholdPercent int32 `json:"thresholdPercent,omitempty"`

	// Percent is how much of its current size the data (or metadata) grows by each time, 5 to 100.
	// +optional
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=100
	Percent int32 `json:"percent,omitempty"`

	// MaxSizePercent is the largest share of the volume group the pool's data may reach, 10 to 100
	// (the pool's metadata and lvm2's metadata spare come on top, so 100 leaves what they need).
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=100
	MaxSizePercent int32 `json:"maxSizePercent,omitempty"`
}
