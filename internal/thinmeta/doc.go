// Package thinmeta reads the block maps of LVM thin volumes from their pool's
// metadata: the ranges that differ between two thin snapshots of one volume
// (Delta) and the ranges allocated to one thin volume (Allocated). It is the
// core of CSI changed block tracking (the SnapshotMetadata service,
// docs/changed-blocks.md).
//
// The pool's metadata is live and changes under IO, so it is only read
// through a metadata snapshot: `dmsetup message <vg>-<pool>-tpool 0
// reserve_metadata_snap`, then thin_delta or thin_dump with --metadata-snap
// on the pool's _tmeta device, then release_metadata_snap. A Reader holds at
// most one metadata snapshot per pool at a time, never longer than its hold
// deadline, and always releases it; Recover releases one left behind by a
// crash. The tools' XML output is decoded token by token while it streams,
// so memory stays bounded for any volume size, and ranges are handed to a
// callback in increasing order, adjacent ones merged, in bytes (block size =
// the pool's chunk size).
//
// Every command runs through an exec.Executor.
package thinmeta
