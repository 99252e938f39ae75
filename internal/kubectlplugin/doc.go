// Package kubectlplugin is the kubectl plugin kubectl-lvms: read-only commands that explain the LVM
// storage of a cluster from the objects the operator, the node agents and the CSI driver write.
//
//   - status: the LVMCluster and every volume group of every node, with capacity and thin pool fill;
//   - disks: every disk of every node, and which device class uses it or why none does;
//   - volumes: every topolvm.io PersistentVolume joined with its LogicalVolume, and LogicalVolumes
//     that no PersistentVolume uses;
//   - why: why a PersistentVolumeClaim is Pending, node by node (computed by internal/placement,
//     which the operator's claim events share).
//
// Each command is a Runner: it reads through a controller-runtime client.Reader and writes a table,
// JSON or YAML to an io.Writer, so tests run it against a fake client. NewRootCommand wires the
// Runners into cobra with kubectl's connection flags. The product binary cmd/lvms never imports this
// package; cmd/kubectl-lvms does. docs/kubectl-lvms.md is the user guide.
package kubectlplugin
