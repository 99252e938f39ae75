// Package vgmanager is the volume-group manager of the node agent (`lvms node`): it builds, grows,
// shrinks and tears down the LVM volume group of every LVMVolumeGroup that selects this node, and
// reports the result in this node's LVMVolumeGroupNodeStatus.
//
// The package has two layers. NodeManager is the disk side and knows nothing of Kubernetes: given a
// device class spec, the node name and whether this node already wiped its disks, it inventories the
// block devices, filters them (every rejected device gets reasons), plans the changes (the plan is
// written to the status before anything is changed, and is all that happens in dry-run), wipes only
// with the triple opt-in, creates or extends the VG (tagged @lvms) and its thin pool, removes
// unselected empty disks, and returns the observed VGStatus. Reconciler is the thin Kubernetes shell
// around it: per-node finalizer, the wiped annotation, the dry-run annotation, the status entry and
// the device classes of the in-process lvmd.
//
// See docs/vgmanager.md for the flow and its safety rules.
package vgmanager
