package thinmeta

import "errors"

// Sentinel errors; test with errors.Is.
var (
	// ErrNotThin: an LV given is not a thin volume (or the pool is not a
	// thin pool).
	ErrNotThin = errors.New("not a thin volume")
	// ErrNotFound: an LV, or its thin device in the pool's metadata, does not
	// exist.
	ErrNotFound = errors.New("not found")
	// ErrDifferentPools: the two thin volumes of a delta are not in one pool.
	ErrDifferentPools = errors.New("thin volumes in different pools")
	// ErrDifferentVolumes: the base and the target of a delta are not
	// snapshots of one volume.
	ErrDifferentVolumes = errors.New("not snapshots of the same volume")
	// ErrPoolInactive: the thin pool is not active on this node, so its
	// metadata cannot be read safely.
	ErrPoolInactive = errors.New("thin pool not active")
	// ErrMetadataSnapshotHeld: the pool holds a metadata snapshot this
	// Reader did not take (another tool, or one left by a crash: see
	// Reader.Recover).
	ErrMetadataSnapshotHeld = errors.New("pool already holds a metadata snapshot")
	// ErrHoldDeadline: reading took longer than the Reader's hold deadline;
	// the metadata snapshot was released.
	ErrHoldDeadline = errors.New("metadata snapshot hold deadline exceeded")
	// ErrMalformed: thin_delta or thin_dump printed something this package
	// does not understand.
	ErrMalformed = errors.New("malformed thin metadata output")
	// ErrInvalidArgument: a name or option given is not valid.
	ErrInvalidArgument = errors.New("invalid argument")
)
