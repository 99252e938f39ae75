package lvm

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// Sentinel errors. Errors returned by Client wrap one of these (test with
// errors.Is or the Is* helpers) together with the underlying *exec.Error, so
// the lvm2 message stays available.
var (
	// ErrNotFound: the VG, LV or PV does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a VG or LV of that name exists already.
	ErrAlreadyExists = errors.New("already exists")
	// ErrInsufficientSpace: the VG (or the allowed PVs) lack free extents.
	ErrInsufficientSpace = errors.New("insufficient free space")
	// ErrNotOurs: refused to modify a VG that does not carry the Tag, or a
	// PV that belongs to a VG.
	ErrNotOurs = errors.New("not managed by lvms")
	// ErrInUse: the LV is open (mounted or used) and cannot be removed or
	// deactivated.
	ErrInUse = errors.New("in use")
	// ErrInvalidArgument: lvm2 rejected the command line (exit status 3), or
	// the options given to Client were inconsistent.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrSizeUnchanged: an extend was asked for the size the LV already has.
	// ExtendLV treats this as success; it is exported for callers of Run.
	ErrSizeUnchanged = errors.New("size unchanged")
	// ErrUnchanged: an lvchange asked for a setting the LV already has (lvm2 fails such a
	// command). SetReadAhead treats this as success.
	ErrUnchanged = errors.New("setting unchanged")
	// ErrMissingPVs: lvm2 refuses to change the metadata of a VG while one of its PVs is missing
	// (every lvcreate, lvextend and lvchange that writes it) until the PV comes back or is removed
	// (RemoveMissingPVs); lvconvert --repair and lvremove still work.
	ErrMissingPVs = errors.New("physical volumes missing")
)

// stderrClasses maps lvm2 messages (LC_ALL=C, verified against lvm2
// 2.03.16) to sentinels; the first match wins. Matching is case-insensitive.
var stderrClasses = []struct {
	sentinel error
	re       *regexp.Regexp
}{
	// New size (13 extents) matches existing size (13 extents).
	{ErrSizeUnchanged, regexp.MustCompile(`(?i)matches existing size`)},
	// Read ahead is already auto for "lv"  /  Read ahead is already 256 for "lv"
	{ErrUnchanged, regexp.MustCompile(`(?i)read ahead is already`)},
	// Volume group "vg" has insufficient free space (459 extents): 2560 required.
	// Insufficient suitable allocatable extents for logical volume lv: ...
	// Insufficient suitable contiguous allocatable extents ...
	// Number of stripes (3) must not exceed number of physical volumes (2)
	{ErrInsufficientSpace, regexp.MustCompile(`(?i)insufficient (free space|suitable|allocatable)|` +
		`not enough free space|must not exceed number of physical volumes`)},
	// Cannot change VG vg while PVs are missing.
	{ErrMissingPVs, regexp.MustCompile(`(?i)while PVs are missing`)},
	// Logical Volume "lv" already exists in volume group "vg"
	// A volume group called vg already exists.
	{ErrAlreadyExists, regexp.MustCompile(`(?i)already exists`)},
	// Logical volume vg/lv in use.
	// Logical volume vg/lv contains a filesystem in use.
	// Command on LV vg/lv uses options that are invalid with LV properties: lv_is_thick_origin .
	// (an lvchange --readahead of the origin of a copy-on-write snapshot)
	{ErrInUse, regexp.MustCompile(`(?i)logical volume \S+ (is )?(in use|contains a filesystem in use)|` +
		`can't remove open logical volume|invalid with LV properties: lv_is_thick_origin`)},
	// Failed to find logical volume "vg/lv"
	// Logical volume lv not found in volume group vg.
	// Volume group "vg" not found
	// No device found for /dev/x.
	// Failed to find physical volume "/dev/x".
	{ErrNotFound, regexp.MustCompile(`(?i)failed to find (logical|physical) volume|` +
		`not found in volume group|volume group "[^"]*" not found|no device found for|` +
		`device .* not found`)},
}

// classify wraps err with the sentinel matching its lvm2 message, if any.
func classify(err error) error {
	e, ok := exec.AsError(err)
	if !ok {
		return err
	}
	for _, class := range stderrClasses {
		if class.re.MatchString(e.Stderr) {
			return fmt.Errorf("%w: %w", class.sentinel, err)
		}
	}
	if e.ExitCode == 3 {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return err
}

// IsNotFound reports whether err means the VG, LV or PV does not exist.
func IsNotFound(err error) bool { return is(err, ErrNotFound) }

// IsAlreadyExists reports whether err means the VG or LV exists already.
func IsAlreadyExists(err error) bool { return is(err, ErrAlreadyExists) }

// IsInsufficientSpace reports whether err means lvm2 could not allocate the
// requested extents.
func IsInsufficientSpace(err error) bool { return is(err, ErrInsufficientSpace) }

// IsMissingPVs reports whether lvm2 refused a change because a PV of the VG is missing.
func IsMissingPVs(err error) bool { return is(err, ErrMissingPVs) }

// IsInUse reports whether err means the LV is open.
func IsInUse(err error) bool { return is(err, ErrInUse) }

// IsInvalidArgument reports whether lvm2 rejected the command line or the options were inconsistent.
func IsInvalidArgument(err error) bool { return is(err, ErrInvalidArgument) }

// IsNotOurs reports whether the operation was refused because the VG is not
// tagged as ours.
func IsNotOurs(err error) bool { return errors.Is(err, ErrNotOurs) }

// is matches sentinel in err's chain, or classifies a raw *exec.Error.
func is(err, sentinel error) bool {
	if errors.Is(err, sentinel) {
		return true
	}
	return errors.Is(classify(err), sentinel)
}
