package lvm

import (
	"fmt"
)

// VolumeType is lv_attr character 1.
type VolumeType byte

// Volume types (lvs(8)).
const (
	VolumeTypePlain          VolumeType = '-'
	VolumeTypeCache          VolumeType = 'C'
	VolumeTypeMirrored       VolumeType = 'm'
	VolumeTypeMirroredNoSync VolumeType = 'M'
	VolumeTypeOrigin         VolumeType = 'o'
	VolumeTypeOriginMerging  VolumeType = 'O'
	VolumeTypeRAID           VolumeType = 'r'
	VolumeTypeRAIDNoSync     VolumeType = 'R'
	VolumeTypeSnapshot       VolumeType = 's'
	VolumeTypeMergingSnap    VolumeType = 'S'
	VolumeTypePVMove         VolumeType = 'p'
	VolumeTypeVirtual        VolumeType = 'v'
	VolumeTypeImage          VolumeType = 'i'
	VolumeTypeImageNoSync    VolumeType = 'I'
	VolumeTypeMirrorLog      VolumeType = 'l'
	VolumeTypeConverting     VolumeType = 'c'
	VolumeTypeThin           VolumeType = 'V'
	VolumeTypeThinPool       VolumeType = 't'
	VolumeTypeThinPoolData   VolumeType = 'T'
	VolumeTypeVDOPool        VolumeType = 'd'
	VolumeTypeVDOPoolData    VolumeType = 'D'
	VolumeTypeMetadata       VolumeType = 'e'
)

// Permission is lv_attr character 2.
type Permission byte

// Permissions.
const (
	PermissionWritable         Permission = 'w'
	PermissionReadOnly         Permission = 'r'
	PermissionReadOnlyActivate Permission = 'R'
	PermissionUnknown          Permission = '-'
)

// LVState is lv_attr character 5.
type LVState byte

// LV states.
const (
	StateInactive                 LVState = '-'
	StateActive                   LVState = 'a'
	StateHistorical               LVState = 'h'
	StateSuspended                LVState = 's'
	StateInvalidSnapshot          LVState = 'I'
	StateSuspendedInvalidSnapshot LVState = 'S'
	StateSnapshotMergeFailed      LVState = 'm'
	StateSuspendedMergeFailed     LVState = 'M'
	StateMappedNoTables           LVState = 'd'
	StateMappedInactiveTable      LVState = 'i'
	StateThinPoolCheckNeeded      LVState = 'c'
	StateSuspendedCheckNeeded     LVState = 'C'
	StateUnknown                  LVState = 'X'
)

// TargetType is lv_attr character 7.
type TargetType byte

// Target types.
const (
	TargetNone     TargetType = '-'
	TargetCache    TargetType = 'C'
	TargetMirror   TargetType = 'm'
	TargetRAID     TargetType = 'r'
	TargetSnapshot TargetType = 's'
	TargetThin     TargetType = 't'
	TargetUnknown  TargetType = 'u'
	TargetVirtual  TargetType = 'v'
	TargetVDO      TargetType = 'V'
)

// Health is lv_attr character 9.
type Health byte

// Health values. For thin pools 'F' means failed, 'D' out of data space and
// 'M' metadata read-only.
const (
	HealthOK               Health = '-'
	HealthPartial          Health = 'p'
	HealthRefreshNeeded    Health = 'r'
	HealthMismatches       Health = 'm'
	HealthWriteMostly      Health = 'w'
	HealthUnknown          Health = 'X'
	HealthFailed           Health = 'F'
	HealthOutOfDataSpace   Health = 'D'
	HealthMetadataReadOnly Health = 'M'
	HealthError            Health = 'E'
)

// LVAttr is the parsed 10-character lv_attr field.
type LVAttr struct {
	VolumeType VolumeType
	Permission Permission
	Allocation byte // a(nywhere), c(ontiguous), i(nherited), l (cling), n(ormal); upper case when locked
	FixedMinor bool
	State      LVState
	Open       byte // 'o' open, '-' closed, 'X' unknown
	TargetType TargetType
	Zero       bool
	Health     Health
	SkipActive bool // activation skip flag ('k')
}

// ParseLVAttr parses an lv_attr string such as "twi-aotz--".
func ParseLVAttr(s string) (LVAttr, error) {
	if len(s) != 10 {
		return LVAttr{}, fmt.Errorf("lv_attr %q: want 10 characters, got %d", s, len(s))
	}
	for i := range len(s) {
		if s[i] < '!' || s[i] > '~' {
			return LVAttr{}, fmt.Errorf("lv_attr %q: invalid character at %d", s, i+1)
		}
	}
	return LVAttr{
		VolumeType: VolumeType(s[0]),
		Permission: Permission(s[1]),
		Allocation: s[2],
		FixedMinor: s[3] == 'm',
		State:      LVState(s[4]),
		Open:       s[5],
		TargetType: TargetType(s[6]),
		Zero:       s[7] == 'z',
		Health:     Health(s[8]),
		SkipActive: s[9] == 'k',
	}, nil
}

// String returns the 10-character lv_attr string ("" for the zero value).
func (a LVAttr) String() string {
	if a.VolumeType == 0 {
		return ""
	}
	flag := func(set bool, c byte) byte {
		if set {
			return c
		}
		return '-'
	}
	return string([]byte{
		byte(a.VolumeType), byte(a.Permission), a.Allocation, flag(a.FixedMinor, 'm'), byte(a.State),
		a.Open, byte(a.TargetType), flag(a.Zero, 'z'), byte(a.Health), flag(a.SkipActive, 'k'),
	})
}

// Active reports whether the LV is active (mapped with a live table).
func (a LVAttr) Active() bool { return a.State == StateActive }

// Suspended reports whether the LV's device is suspended.
func (a LVAttr) Suspended() bool {
	switch a.State {
	case StateSuspended, StateSuspendedInvalidSnapshot, StateSuspendedMergeFailed, StateSuspendedCheckNeeded:
		return true
	default:
		return false
	}
}

// IsOpen reports whether the LV's device is open (mounted or in use).
func (a LVAttr) IsOpen() bool { return a.Open == 'o' }

// IsThinPool reports whether the LV is a thin pool.
func (a LVAttr) IsThinPool() bool { return a.VolumeType == VolumeTypeThinPool }

// IsThin reports whether the LV is a thin volume (including thin snapshots).
func (a LVAttr) IsThin() bool { return a.VolumeType == VolumeTypeThin }

// IsSnapshot reports whether the LV is a thick (COW) snapshot.
func (a LVAttr) IsSnapshot() bool {
	return a.VolumeType == VolumeTypeSnapshot || a.VolumeType == VolumeTypeMergingSnap
}

// IsRAID reports whether the LV is a RAID LV (not one of its images).
func (a LVAttr) IsRAID() bool {
	return a.VolumeType == VolumeTypeRAID || a.VolumeType == VolumeTypeRAIDNoSync
}

// Writable reports whether the LV is writable.
func (a LVAttr) Writable() bool { return a.Permission == PermissionWritable }

// Healthy reports whether lvm2 reports no health problem.
func (a LVAttr) Healthy() bool { return a.Health == HealthOK }
