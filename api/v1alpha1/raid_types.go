package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

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

// RAIDConfig makes the volumes of a thick device class lvm2 RAID LVs. Immutable. The disk count rules
// (mirrors+1, stripes+1, ...) are on DeviceClass, where deviceSelector is visible.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="raidConfig is immutable: create a new device class for another RAID layout"
// +kubebuilder:validation:XValidation:rule="!has(self.mirrors) || self.type in ['raid1', 'raid10']",message="raidConfig.mirrors applies only to raid1 and raid10: remove it",fieldPath=".mirrors"
// +kubebuilder:validation:XValidation:rule="!has(self.stripes) || self.type != 'raid1'",message="raidConfig.stripes does not apply to raid1: remove it or use raid10",fieldPath=".stripes"
// +kubebuilder:validation:XValidation:rule="!has(self.stripes) || self.type != 'raid6' || self.stripes >= 3",message="raidConfig.stripes must be at least 3 for raid6 (lvm2 refuses fewer): raise stripes or use raid5",fieldPath=".stripes"
// +kubebuilder:validation:XValidation:rule="!has(self.stripeSize) || self.type != 'raid1'",message="raidConfig.stripeSize does not apply to raid1: remove it",fieldPath=".stripeSize"
type RAIDConfig struct {
	// Type is the RAID level.
	// +required
	Type RAIDType `json:"type"`

	// Mirrors is the number of additional copies of the data (lvcreate --mirrors) for raid1 and raid10.
	// Default 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Mirrors *int32 `json:"mirrors,omitempty"`

	// Stripes is the number of data stripes (lvcreate --stripes) for raid4, raid5, raid6 and raid10,
	// at least 2 (3 for raid6). Default 2 (3 for raid6).
	// +optional
	// +kubebuilder:validation:Minimum=2
	Stripes *int32 `json:"stripes,omitempty"`

	// StripeSize is the stripe size (lvcreate --stripesize), a power of two of at least 4Ki (lvm2's
	// minimum, the page size).
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isInteger() && quantity(string(self)).asInteger() in [4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576, 2097152, 4194304, 8388608, 16777216, 33554432, 67108864, 134217728, 268435456, 536870912, 1073741824, 2147483648, 4294967296, 8589934592, 17179869184, 34359738368, 68719476736, 137438953472, 274877906944, 549755813888, 1099511627776, 2199023255552, 4398046511104, 8796093022208, 17592186044416, 35184372088832, 70368744177664, 140737488355328, 281474976710656, 562949953421312, 1125899906842624, 2251799813685248, 4503599627370496, 9007199254740992, 18014398509481984, 36028797018963968, 72057594037927936, 144115188075855872, 288230376151711744, 576460752303423488, 1152921504606846976, 2305843009213693952, 4611686018427387904]",message="raidConfig.stripeSize must be a power of two of at least 4Ki (lvm2's smallest stripe), such as 64Ki, 128Ki or 256Ki"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	StripeSize *resource.Quantity `json:"stripeSize,omitempty"`
}
