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

	// ChunkSizeCalculationPolicy is Static (use chunkSize, default 128Ki) or Host (lvm2 chooses).
	// +optional
	// +kubebuilder:default=Static
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="thinPoolConfig.chunkSizeCalculationPolicy is immutable"
	ChunkSizeCalculationPolicy ChunkSizeCalculationPolicy `json:"chunkSizeCalculationPolicy,omitempty"`

	// ChunkSize of the thin pool, 64Ki to 1Gi, a multiple of 64Ki. Only with the Static policy.
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
}
