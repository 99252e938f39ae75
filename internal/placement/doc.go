// Package placement explains where a PersistentVolumeClaim of the topolvm.io driver can get its
// volume: it reads the claim, its StorageClass, the LVMCluster's default device class, every Node's
// capacity annotation and the node agents' LVMVolumeGroupNodeStatuses, and judges each node's device
// class against the request (Report, NodeFit).
//
// Two programs use it: kubectl lvms why (internal/kubectlplugin) prints the Report, and the operator's
// claimevents controller turns a Report in which no node fits into a one-line Warning Event on the
// claim (CapacityMessage). The package reads through a controller-runtime client.Reader and imports
// only API types and client libraries, so the operator binary can use it without the kubectl plugin's
// dependencies.
package placement
