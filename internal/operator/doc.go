// Package operator is the operator (`lvms operator`): Options, bound to the command's flags by
// AddFlags, and Setup, which adds every part of the operator to a controller-runtime manager, as
// nodeagent.Setup does for the node agent.
//
// Setup's parts:
//
//   - The LVMCluster controller (internal/controller/lvmcluster) and its metrics, the node-removal
//     controller and the claim events controller.
//   - The CSI Identity and Controller services on a unix socket for the sidecars.
//   - The admission webhooks, served once their certificate exists: in the self mode the
//     operator issues and rotates it (cert-controller's rotator), keeps it in a Secret, copies the
//     serving pair into a directory of its own (certFiles) and injects the CA into the webhook
//     configurations; in the external mode the files come from elsewhere.
//   - With SnapshotMetadata, the certificates of changed block tracking and the
//     SnapshotMetadataService object (snapmeta.go).
//   - Copies between nodes (transfer.go): the transfer authority, the signer of the node agents'
//     certificates and the issuer of transfer tokens; with CrossNodeRestore the CSI controller places
//     restores on other nodes than their snapshots'.
//   - The health and readiness checks.
//
// The node agent's image defaults to the operator's own (OwnImage), and every VG and LV is tagged
// with the cluster's identity (ClusterID).
package operator
