// Package claimevents is the operator's claim-events controller: when the scheduler cannot place a
// Pod and a PersistentVolumeClaim of that Pod waits for a topolvm.io volume that no node has room for,
// it records a Warning Event with reason NotEnoughCapacity on the claim. The note says, in bytes, per
// node, what each node's device class can hold or why it cannot take the volume (internal/placement
// computes it; kubectl lvms why shows the same, node by node).
//
// The controller watches Pods that are not on a node yet (its own cache, field-selected on an empty
// spec.nodeName, so the operator does not hold every Pod of the cluster) and reconciles those whose
// PodScheduled condition is False with reason Unschedulable. Claims that some node can hold get no
// event: the scheduler's own event on the Pod says why it did not place it.
//
// An unschedulable Pod is looked at again every minute, since capacity changes on Nodes and node
// statuses, not on the Pod. An event is recorded only when its note differs from the last one
// recorded for the claim, and at most every 13 minutes per claim: the events recorder would fold a
// sooner one into the series of the previous event, under the previous note. The controller records
// with a broadcaster of its own, whose sink reports a NotEnoughCapacity event the API server did not
// take; that claim's note is then forgotten, and the next look records it again.
package claimevents
