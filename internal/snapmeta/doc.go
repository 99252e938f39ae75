// Package snapmeta serves the CSI SnapshotMetadata service (Kubernetes changed block tracking) of
// thin device classes. Node answers on the node that holds the snapshots, from their thin pool's
// metadata (package thinmeta): GetMetadataAllocated lists the byte ranges a snapshot maps,
// GetMetadataDelta the ranges that differ between two snapshots of one volume. Ranges are
// VARIABLE_LENGTH block metadata, in increasing order, adjacent ones merged, aligned to the pool's
// chunk size, streamed in messages of at most max_results as thin_delta or thin_dump produce them.
// Snapshots in thick device classes answer Unimplemented. docs/changed-blocks.md has the design.
package snapmeta
