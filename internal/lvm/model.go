package lvm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The state model: how each lvm2 command the Client runs changes the LVM objects. lvmd's cache
// applies its own successful commands with it instead of reading the state again, and the test
// fake (lvmtest) is built on it, so both follow one description of lvm2's behaviour: extents
// rounded up (per stripe), areas allocated in rounds over the PVs with the most free extents
// (Layout), RAID images and thin pool data and metadata as hidden sub-LVs, the pool metadata
// spare, and lvm2's messages for what it refuses.

// Op is one lvm2 command's change to the LVM objects; State.Apply applies it. The ops carry the
// same option types the Client builds its command lines from.
type Op interface {
	apply(s *State) error
}

// Apply changes s as lvm2 would run op. When lvm2 would refuse the command, s is unchanged and
// the error wraps the sentinel lvm2's message is classified as (ErrNotFound, ErrAlreadyExists,
// ErrInsufficientSpace, ErrInUse, ErrInvalidArgument); its text is lvm2's message.
//
// Apply copies the VGs and PVs (a few), not the LVs (thousands on a busy node): every op makes
// its checks and allocations (which change PVs and VGs only) before it changes an LV, so a refused
// op has changed none (TestApplyRandomSequences checks it). What an op changes of an LV's slices
// (tags, segments) it replaces, never writes in place, so an LV read from the state before stays
// as it was.
func (s *State) Apply(op Op) error {
	next := State{VGs: slices.Clone(s.VGs), PVs: slices.Clone(s.PVs), LVs: s.LVs}
	if err := op.apply(&next); err != nil {
		return err
	}
	for _, vg := range next.VGs {
		next.recount(vg.Name)
	}
	*s = next
	return nil
}

// Clone returns a deep copy of s (LV segments and tags included).
func (s *State) Clone() *State {
	out := &State{VGs: slices.Clone(s.VGs), PVs: slices.Clone(s.PVs), LVs: slices.Clone(s.LVs)}
	for i := range out.VGs {
		out.VGs[i].Tags = slices.Clone(out.VGs[i].Tags)
	}
	for i := range out.LVs {
		lv := &out.LVs[i]
		lv.Tags = slices.Clone(lv.Tags)
		lv.Segments = slices.Clone(lv.Segments)
		for j := range lv.Segments {
			lv.Segments[j].Devices = slices.Clone(lv.Segments[j].Devices)
		}
	}
	return out
}

// modelError is a refusal of the model: lvm2's message, classified as sentinel.
type modelError struct {
	sentinel error
	msg      string
}

func (e *modelError) Error() string { return e.msg }
func (e *modelError) Unwrap() error { return e.sentinel }

func refuse(sentinel error, format string, args ...any) error {
	return &modelError{sentinel: sentinel, msg: fmt.Sprintf(format, args...)}
}

// Refusal returns lvm2's refusal of a command: the error's text is lvm2's message, and it wraps
// sentinel (nil: a message the Client does not classify). Fakes of lvm2 (lvmtest) refuse with it.
func Refusal(sentinel error, format string, args ...any) error {
	return refuse(sentinel, format, args...)
}

// ExitCode returns the exit status lvm2 ends with when it refuses a command for err: 3 for an
// invalid command line, 5 otherwise.
func ExitCode(err error) int {
	if errors.Is(err, ErrInvalidArgument) {
		return 3
	}
	return 5
}

// vgIndex returns the index of VG name, or lvm2's not-found refusal.
func (s *State) vgIndex(name string) (int, error) {
	i := slices.IndexFunc(s.VGs, func(vg VG) bool { return vg.Name == name })
	if i < 0 {
		return -1, refuse(ErrNotFound, "Volume group \"%s\" not found", name)
	}
	return i, nil
}

// lvIndex returns the index of LV vg/name, or lvm2's not-found refusal.
func (s *State) lvIndex(vg, name string) (int, error) {
	if _, err := s.vgIndex(vg); err != nil {
		return -1, err
	}
	i := slices.IndexFunc(s.LVs, func(lv LV) bool { return lv.VGName == vg && lv.Name == name })
	if i < 0 {
		return -1, refuse(ErrNotFound, "Failed to find logical volume \"%s/%s\"", vg, name)
	}
	return i, nil
}

// newLV returns VG vg if name is free in it for a new LV.
func (s *State) newLV(vg, name string) (VG, error) {
	v, ok := s.VG(vg)
	if !ok {
		return v, refuse(ErrNotFound, "Volume group \"%s\" not found", vg)
	}
	return v, s.newLVName(vg, name)
}

// newLVName checks that name is free in VG vg.
func (s *State) newLVName(vg, name string) error {
	if err := ValidName(name); err != nil {
		return refuse(ErrInvalidArgument, "Logical volume name \"%s\" is invalid.", name)
	}
	if _, ok := s.LV(vg, name); ok {
		return refuse(ErrAlreadyExists, "Logical Volume \"%s\" already exists in volume group \"%s\"", name, vg)
	}
	return nil
}

// addLV adds lv (visible or hidden) to VG vg with its paths and a new UUID.
func (s *State) addLV(vg VG, lv LV) {
	lv.VGName = vg.Name
	if !lv.Hidden {
		lv.Path = "/dev/" + vg.Name + "/" + lv.Name
		lv.DMPath = DMPath(vg.Name, lv.Name)
	}
	lv.UUID = fmt.Sprintf("model-%s-%s-%d", vg.Name, lv.Name, len(s.LVs))
	if lv.ReadAhead == "" {
		lv.ReadAhead = ReadAheadAuto // lvcreate's default
	}
	s.LVs = append(s.LVs, lv)
}

// recount sets the VG's LV and PV counts, and marks its thin pools open once a thin LV of theirs
// is active: lvm2 then maps the pool in two layers, and the pool stays open until it is
// deactivated (measured: TestGuestModelFollowsLVM2). State.Apply runs it after every op.
func (s *State) recount(vg string) {
	i := slices.IndexFunc(s.VGs, func(v VG) bool { return v.Name == vg })
	if i < 0 {
		return
	}
	s.VGs[i].LVCount, s.VGs[i].PVCount = 0, 0
	for _, pv := range s.PVs {
		if pv.VGName == vg {
			s.VGs[i].PVCount++
		}
	}
	var active []string // pools with an active thin LV (a few)
	for _, lv := range s.LVs {
		if lv.VGName != vg {
			continue
		}
		if !lv.Hidden {
			s.VGs[i].LVCount++
		}
		if lv.PoolLV != "" && lv.Attr.Active() && !slices.Contains(active, lv.PoolLV) {
			active = append(active, lv.PoolLV)
		}
	}
	for j := range s.LVs {
		if pool := &s.LVs[j]; pool.VGName == vg && pool.Attr.IsThinPool() && slices.Contains(active, pool.Name) {
			pool.Attr.Open = 'o'
		}
	}
}

// DMPath returns the device-mapper path of LV lv in VG vg (each "-" of a name doubled).
func DMPath(vg, lv string) string {
	return "/dev/mapper/" + strings.ReplaceAll(vg, "-", "--") + "-" + strings.ReplaceAll(lv, "-", "--")
}

// attr builds the lv_attr of an active LV of volume type vt.
func attr(vt VolumeType, writable bool, target TargetType, zero bool) LVAttr {
	perm := PermissionWritable
	if !writable {
		perm = PermissionReadOnly
	}
	return LVAttr{
		VolumeType: vt, Permission: perm, Allocation: 'i', State: StateActive, Open: '-',
		TargetType: target, Zero: zero, Health: HealthOK,
	}
}

// hiddenAttr builds the lv_attr of an active sub-LV that its parent holds open.
func hiddenAttr(vt VolumeType, target TargetType) LVAttr {
	a := attr(vt, true, target, false)
	a.Open = 'o'
	return a
}
