package vgmanager

import (
	"time"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// DryRunAnnotation set to "true" on the LVMCluster that owns an LVMVolumeGroup (or on the
// LVMVolumeGroup itself) makes every node only plan: nothing is changed on disk, and the status
// says what would be done. It is defined in the API package, which tools read it from.
const DryRunAnnotation = lvmv1alpha1.DryRunAnnotation

// WipedAnnotationPrefix is the prefix of the wiped marker; it is defined in the API package, where
// the operator's node agent policy reads it too.
const WipedAnnotationPrefix = lvmv1alpha1.WipedAnnotationPrefix

// FieldOwnerPrefix prefixes the server-side apply field owner of a volume group's entry in the
// LVMVolumeGroupNodeStatus; the volume group name follows it. One owner per volume group lets each
// entry be applied, and removed, on its own.
const FieldOwnerPrefix = "lvms-vgmanager/"

// DefaultDiscoveryInterval is how often a node looks for new disks while a volume group can still
// grow (deviceDiscoveryPolicy Dynamic, or not created yet): disks appear without any Kubernetes
// event.
const DefaultDiscoveryInterval = time.Minute

// DefaultRAIDRepairDelay is how long a RAID class's missing disk has to come back (a disk slow to
// appear after a reboot, a cable) before the agent repairs its RAID LVs elsewhere.
const DefaultRAIDRepairDelay = 5 * time.Minute

// Event reasons.
const (
	EventDevicesWiped    = "DevicesWiped"
	EventVolumeGroup     = "VolumeGroupChanged"
	EventDeletionBlocked = "DeletionBlocked"
	EventFailed          = "VolumeGroupFailed"
)

// Finalizer returns the per-node cleanup finalizer of nodeName.
func Finalizer(nodeName string) string { return lvmv1alpha1.CleanupFinalizerPrefix + nodeName }

// WipedAnnotation returns the wiped annotation of nodeName.
func WipedAnnotation(nodeName string) string { return WipedAnnotationPrefix + nodeName }

// FieldOwner returns the field owner of volume group vg's status entry.
func FieldOwner(vg string) string { return FieldOwnerPrefix + vg }
