// Package lvmcluster is the LVMCluster controller of `lvms operator`: it turns the one LVMCluster of
// the cluster into its operands (CSIDriver, one LVMVolumeGroup per device class, the node agent
// DaemonSet, StorageClasses, VolumeSnapshotClasses and, on OpenShift, a SecurityContextConstraints),
// aggregates the node agents' LVMVolumeGroupNodeStatuses into its status, and tears everything down
// in a safe order when it is deleted.
//
// Operands are written with server-side apply under one field owner, so drift (an edited or deleted
// operand) is repaired on the next reconcile, which watches on the operands trigger.
package lvmcluster
